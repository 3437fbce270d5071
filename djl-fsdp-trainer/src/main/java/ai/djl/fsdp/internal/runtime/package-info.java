/**
 * The FSDP runtime, one concept per class as in PyTorch FSDP2's {@code _fully_shard}: a unit and
 * where its parameters are ({@link ai.djl.fsdp.internal.runtime.FsdpUnit}, {@link
 * ai.djl.fsdp.internal.runtime.UnitState}; FSDP2's {@code FSDPParam}s), one unit's part in a step
 * from gather to gradient reduction ({@link ai.djl.fsdp.internal.runtime.UnitLifecycle}, {@code
 * FSDPParamGroup}), the collectives that gather and reduce it ({@link
 * ai.djl.fsdp.internal.runtime.Collectives}, with typed work in flight), the passes and the order
 * of the calls ({@link ai.djl.fsdp.internal.runtime.ShardedPasses}, the root's {@code FSDPState}),
 * the backward tape ({@link ai.djl.fsdp.internal.runtime.BackwardTape}), and the sharded model that
 * ties them to the block tree ({@link ai.djl.fsdp.internal.runtime.ShardedModel}).
 *
 * <p>DJL offers no autograd hooks or custom autograd functions, so PyTorch FSDP's way of running
 * code before a unit's backward is not available. Units are called on detached inputs and return
 * fresh leaves, a tape records the calls, and backward walks the tape in reverse with
 * vector-Jacobian products, through each unit's graph kept from forward or rebuilt by recompute
 * (activation checkpointing). Synchronized batch statistics ({@link
 * ai.djl.fsdp.internal.runtime.SyncBatchNorm}) cut the graph the same way inside a unit: a
 * BatchNorm hands on a fresh leaf, and its {@code NormCall} sums the gradient's terms over the
 * ranks in backward.
 *
 * <p>Internal to the trainer module: no other module reaches it (the house test holds this), so it
 * changes without notice; programs use {@code ai.djl.fsdp.trainer}.
 */
package ai.djl.fsdp.internal.runtime;
