package ai.djl.fsdp.runtime;

/** Where a unit's parameters are: only as shards, on their way to being whole, or whole. */
public enum UnitState {
    /** Only this rank's shards exist. */
    RESHARDED,
    /** An all-gather into the full buffers is in flight. */
    GATHERING,
    /** The full buffers hold every rank's shards. */
    GATHERED
}
