package ai.djl.fsdp.dist.nccl;

/**
 * A collective queued on the GPU as {@link NcclWatchdog} sees it: whether it has finished, its name
 * and its age. An interface so that the watchdog's verdicts on collectives in flight are checked on
 * machines without a GPU.
 */
interface QueuedCollective {

    /**
     * Returns whether the collective has finished.
     *
     * @throws ai.djl.fsdp.dist.CollectiveException if CUDA reports an error for it
     */
    boolean poll();

    /** Returns the collective's name and sequence number, for messages. */
    String name();

    /** Returns how long ago the collective was queued. */
    long ageNanos();
}
