package ai.djl.fsdp.bench;

import picocli.CommandLine.Option;

/**
 * The collectives benchmark's options (a picocli mixin): {@link CollectivesBenchCommand} and each
 * {@link CollectivesBenchRank} parse them, so each is declared once.
 */
final class CollectivesOptions {

    @Option(
            names = "--bytes",
            defaultValue = "67108864",
            description = "Size of the larger buffer in bytes (default: ${DEFAULT-VALUE}).")
    private long bytes;

    @Option(
            names = "--iters",
            defaultValue = "20",
            description = "Timed runs per collective (default: ${DEFAULT-VALUE}).")
    private int iterations;

    @Option(
            names = "--warmup",
            defaultValue = "5",
            description = "Untimed runs first (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Option(
            names = "--shard-group-size",
            defaultValue = "0",
            description =
                    "Ranks of a shard group (0: one group of every rank). Less than the ranks:"
                            + " all_gather and reduce_scatter run inside shard groups of this many"
                            + " consecutive ranks, all_reduce across the replicate groups on"
                            + " their 1/S shard of the buffer, as hybrid sharding runs them"
                            + " (default: ${DEFAULT-VALUE}).")
    private int shardGroupSize;

    /** Returns the larger buffer's size in bytes. */
    long bytes() {
        return bytes;
    }

    /** Returns the timed runs per collective. */
    int iterations() {
        return iterations;
    }

    /** Returns the untimed runs first. */
    int warmup() {
        return warmup;
    }

    /**
     * Returns the ranks of a shard group: {@code --shard-group-size}, or every rank when it is 0.
     *
     * @param worldSize the ranks
     * @return the shard group's size
     */
    int shardGroupSize(int worldSize) {
        return shardGroupSize == 0 ? worldSize : shardGroupSize;
    }

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @param worldSize the ranks
     * @throws IllegalArgumentException naming the option and what it must be
     */
    void check(int worldSize) {
        if (shardGroupSize < 0 || shardGroupSize > 0 && worldSize % shardGroupSize != 0) {
            throw new IllegalArgumentException(
                    "--shard-group-size must divide the "
                            + worldSize
                            + " ranks (or be 0 for one group of all), got "
                            + shardGroupSize);
        }
        int ranks = shardGroupSize(worldSize);
        if (bytes <= 0 || bytes % ((long) Float.BYTES * ranks) != 0) {
            throw new IllegalArgumentException(
                    "--bytes must be a positive multiple of 4 bytes (a float32) times "
                            + ranks
                            + " ranks, got "
                            + bytes);
        }
        if (iterations < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "--iters must be at least 1 and --warmup at least 0, got "
                            + iterations
                            + " and "
                            + warmup);
        }
    }
}
