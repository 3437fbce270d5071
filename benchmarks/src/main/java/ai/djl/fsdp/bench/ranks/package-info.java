/**
 * How every {@code bin/fsdp bench} command starts its ranks and collects their measurements ({@link
 * ai.djl.fsdp.bench.ranks.BenchRanks}), shared by the commands of {@code ai.djl.fsdp.bench} and its
 * sub-packages and depending on none of them.
 */
package ai.djl.fsdp.bench.ranks;
