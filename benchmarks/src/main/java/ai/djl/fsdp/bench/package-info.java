/**
 * The {@code bin/fsdp bench} command ({@link ai.djl.fsdp.bench.BenchCommand}, found by the launcher
 * as a {@code Subcommand} service), which groups the multi-process benchmarks of the sub-packages,
 * and the collectives benchmark itself: {@link ai.djl.fsdp.bench.CollectivesBenchCommand} starts
 * ranks on this machine, each a {@link ai.djl.fsdp.bench.CollectivesBenchRank} that checks and
 * times all-gather, reduce-scatter and all-reduce ({@link ai.djl.fsdp.bench.Collective}) and
 * reports nccl-tests' bandwidths; {@link ai.djl.fsdp.bench.CollectivesBenchmark} times the same
 * collectives under JMH. Depends on the engine's process groups and launcher and on {@code
 * ai.djl.fsdp.bench.ranks}.
 */
package ai.djl.fsdp.bench;
