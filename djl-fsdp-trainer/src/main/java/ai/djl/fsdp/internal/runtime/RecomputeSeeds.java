package ai.djl.fsdp.internal.runtime;

/**
 * The generator seed of each unit call: a function of (step, micro-batch, unit, call, rank), so a
 * recompute replays its call's randomness (dropout) and ranks draw differently. Only libtorch's
 * generator is seeded, never DJL's, whose sampler shuffles the data.
 */
final class RecomputeSeeds {

    private final int rank;
    private long step;
    private long microBatch;

    RecomputeSeeds(int rank) {
        this.rank = rank;
    }

    /**
     * Returns the seed of the {@code callIndex}-th unit call of this micro-batch ({@code -1} for
     * the root's forward).
     */
    long of(FsdpUnit unit, int callIndex) {
        long h = step;
        h = h * 0x9E3779B97F4A7C15L + microBatch;
        h = h * 0x9E3779B97F4A7C15L + unit.getIndex();
        h = h * 0x9E3779B97F4A7C15L + callIndex;
        h = h * 0x9E3779B97F4A7C15L + rank;
        h ^= h >>> 31;
        return (int) (h ^ (h >>> 32)) & Integer.MAX_VALUE;
    }

    /** Counts a finished micro-batch. */
    void endMicroBatch() {
        microBatch++;
    }

    /** Sets the optimizer steps taken, at the start of a step. */
    void setStep(long step) {
        this.step = step;
        microBatch = 0;
    }

    /** Counts an optimizer step. */
    void endStep() {
        step++;
        microBatch = 0;
    }
}
