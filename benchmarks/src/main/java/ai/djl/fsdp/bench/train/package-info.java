/**
 * {@code bin/fsdp bench train}: the model zoo's GPT-2, or a family built on Llama's block at the
 * same shape ({@link ai.djl.fsdp.bench.train.BenchModel}), trained with FSDP on ranks of this
 * machine (or by DJL's plain trainer, the baseline), reporting throughput, memory per rank against
 * the ideal, traffic, communication wait and model FLOPs against the device's measured
 * matrix-product rate ({@link ai.djl.fsdp.bench.train.MatMulPeak}). {@link
 * ai.djl.fsdp.bench.train.TrainBenchCommand} starts the ranks, each a {@link
 * ai.djl.fsdp.bench.train.TrainBenchRank}, and {@link ai.djl.fsdp.bench.train.TrainBenchReport}
 * turns their measurements into one line. Shares the GPT-2 setup of {@code ai.djl.fsdp.bench.gpt}
 * with the checkpoint benchmark.
 */
package ai.djl.fsdp.bench.train;
