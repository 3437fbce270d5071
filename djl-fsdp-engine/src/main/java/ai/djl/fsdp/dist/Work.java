package ai.djl.fsdp.dist;

/** A collective in flight: wait on it before reading its output or reusing its input. */
public interface Work {

    /**
     * Blocks until the collective has finished on this rank.
     *
     * @throws CollectiveException if it failed here or on a peer
     */
    void await();

    /** Returns whether the collective has finished, successfully or not. */
    boolean isDone();
}
