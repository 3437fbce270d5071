/**
 * {@code bin/fsdp bench attention}: the model zoo's attention kernels compared, one causal
 * self-attention forward and backward at each sequence length, explicit DJL operators against
 * libtorch's fused kernel. {@link ai.djl.fsdp.bench.attention.AttentionBenchCommand} runs each
 * configuration as a {@link ai.djl.fsdp.bench.attention.AttentionBenchRank} in a process of its
 * own, so that the peak resident memory it reports is that configuration's alone.
 */
package ai.djl.fsdp.bench.attention;
