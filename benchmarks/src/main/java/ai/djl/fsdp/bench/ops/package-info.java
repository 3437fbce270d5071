/**
 * {@code bin/fsdp bench ops}: the operators the host called into libtorch, counted from profiler
 * traces (Chrome trace JSON) so that a training step of this project and one of PyTorch FSDP2
 * compare operator by operator. {@link ai.djl.fsdp.bench.ops.OperatorTrace} records a trace through
 * DJL's profiler and reads the top-level operators of one; {@link
 * ai.djl.fsdp.bench.ops.OpsBenchCommand} prints traces side by side. {@code bench train
 * --op-profile} uses it.
 */
package ai.djl.fsdp.bench.ops;
