/**
 * {@code bin/fsdp bench checkpoint}: sharded checkpoints measured against the full Hugging Face
 * save on the model zoo's GPT-2 under FULL_SHARD: time, bytes on disk, the step time a synchronous
 * and an asynchronous save block, and peak resident memory per rank. {@link
 * ai.djl.fsdp.bench.checkpoint.CheckpointBenchCommand} starts the ranks ({@link
 * ai.djl.fsdp.bench.checkpoint.CheckpointBenchRank}) and reports the slowest rank's times and the
 * largest rank's memory. Shares the GPT-2 setup of {@code ai.djl.fsdp.bench.gpt} with the training
 * benchmark.
 */
package ai.djl.fsdp.bench.checkpoint;
