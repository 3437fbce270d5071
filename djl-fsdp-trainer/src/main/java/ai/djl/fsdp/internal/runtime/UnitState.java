package ai.djl.fsdp.internal.runtime;

/**
 * Where a unit's parameters are: only as shards, on their way to being whole, whole, or released
 * (only the shards hold values, but the full buffers' addresses are kept for the graphs that refer
 * to them).
 */
enum UnitState {
    /** Only this rank's shards exist. */
    RESHARDED,
    /** An all-gather into the full buffers is in flight. */
    GATHERING,
    /** The full buffers hold every rank's shards. */
    GATHERED,
    /**
     * The full buffers' physical memory was given back after a forward whose graph refers to them;
     * a gather refills the same addresses before that graph's backward.
     */
    RELEASED
}
