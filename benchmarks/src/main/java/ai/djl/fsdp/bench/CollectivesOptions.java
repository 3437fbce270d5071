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
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @param worldSize the ranks
     * @throws IllegalArgumentException naming the option and what it must be
     */
    void check(int worldSize) {
        if (bytes <= 0 || bytes % ((long) Float.BYTES * worldSize) != 0) {
            throw new IllegalArgumentException(
                    "--bytes must be a positive multiple of 4 bytes (a float32) times "
                            + worldSize
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
