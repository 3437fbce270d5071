package ai.djl.fsdp.dist;

/** A collective in flight: wait on it before reading its output or reusing its input. */
public interface Work {

    /**
     * Makes what this rank does next see the collective's result, as PyTorch's {@code Work.wait}
     * does: on the host (the socket ring) it blocks until the collective has finished; on a GPU
     * (NCCL) it orders the caller's current CUDA stream after it and the host goes on at once, so
     * operators queued next read the result while host code reading device memory must synchronize
     * the stream first.
     *
     * @throws CollectiveException if it failed here or on a peer
     */
    void await();

    /** Returns whether the collective has finished, successfully or not. */
    boolean isDone();
}
