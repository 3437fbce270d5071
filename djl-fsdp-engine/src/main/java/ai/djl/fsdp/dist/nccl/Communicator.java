package ai.djl.fsdp.dist.nccl;

import org.bytedeco.cuda.nccl.ncclComm;

/**
 * One NCCL communicator and its GPU, as the group and its watchdog use it outside the collectives:
 * the asynchronous error the watchdog polls, and the calls that end the communicator. An interface
 * so that the order of those calls (the watchdog stopped before the communicator is finalized,
 * destroyed or aborted) is checked on machines without a GPU.
 */
interface Communicator {

    /** Returns the handle the collectives are queued on. */
    ncclComm handle();

    /**
     * Makes the communicator's GPU current on the calling thread (CUDA's current device is per
     * thread).
     */
    void bindThread();

    /**
     * Returns {@code ncclCommGetAsyncError}'s verdict: {@code ncclSuccess}, {@code ncclInProgress},
     * or the error the communicator has met (or the call's own failure).
     */
    int asyncError();

    /** Waits for the queued operations and flushes the communicator ({@code ncclCommFinalize}). */
    int finalizeComm();

    /** Frees a finalized communicator ({@code ncclCommDestroy}). */
    int destroy();

    /** Makes the communicator's kernels return and frees it ({@code ncclCommAbort}). */
    int abort();

    /** Returns NCCL's text for a result code. */
    String describe(int result);
}
