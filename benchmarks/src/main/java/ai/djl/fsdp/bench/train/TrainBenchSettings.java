package ai.djl.fsdp.bench.train;

import java.util.Set;

/**
 * What the training benchmark runs.
 *
 * @param nproc ranks
 * @param sharding a {@code ShardingStrategy} name, or {@code NONE} for DJL's plain trainer
 * @param steps timed steps
 * @param warmup untimed steps first
 * @param layers transformer layers
 * @param width hidden width
 * @param heads attention heads
 * @param vocab vocabulary size
 * @param sequence tokens per sequence
 * @param batch sequences per rank per step
 */
record TrainBenchSettings(
        int nproc,
        String sharding,
        int steps,
        int warmup,
        int layers,
        int width,
        int heads,
        int vocab,
        int sequence,
        int batch) {

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @throws IllegalArgumentException naming the setting and what it must be
     */
    void check() {
        if (TrainBenchRank.BASELINE.equals(sharding)) {
            if (nproc != 1) {
                throw new IllegalArgumentException(
                        "--sharding NONE runs DJL's plain trainer on one process: use --nproc 1");
            }
        } else if (!Set.of("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD").contains(sharding)) {
            throw new IllegalArgumentException(
                    "--sharding must be FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or NONE, got "
                            + sharding);
        }
        if (nproc < 1 || steps < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "--nproc and --steps must be at least 1 and --warmup at least 0");
        }
        if (layers < 1 || width < 1 || heads < 1 || vocab < 2 || sequence < 1 || batch < 1) {
            throw new IllegalArgumentException(
                    "--layers, --width, --heads, --seq and --batch must be positive, --vocab > 1");
        }
        if (width % heads != 0) {
            throw new IllegalArgumentException(
                    "--width " + width + " must be a multiple of --heads " + heads);
        }
    }
}
