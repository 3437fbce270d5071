package ai.djl.fsdp.dist.nccl;

import java.time.Duration;
import org.bytedeco.cuda.nccl.ncclComm;

/**
 * One NCCL communicator and its GPU, as the group and its watchdog use it outside the collectives:
 * the asynchronous error the watchdog polls, the split that makes a subgroup's, and the calls that
 * end the communicator. An interface so that the order of those calls (the watchdog stopped before
 * the communicator is finalized, destroyed or aborted) and which communicators a failure aborts are
 * checked on machines without a GPU.
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

    /**
     * Joins the communicator of the subgroup {@code color} ({@code ncclCommSplit}), bounded by
     * {@code timeout}; every rank of this communicator calls it.
     *
     * @param color the subgroup this rank joins
     * @param rank this rank's rank in this communicator
     * @param what the subgroup, for messages
     * @param jobRank this rank in the job, for messages
     * @param timeout the longest the split may take
     * @return the subgroup's communicator, on the same GPU
     * @throws ai.djl.fsdp.dist.CollectiveException if the split fails or times out
     */
    Communicator split(int color, int rank, String what, int jobRank, Duration timeout);

    /** Waits for the queued operations and flushes the communicator ({@code ncclCommFinalize}). */
    int finalizeComm();

    /** Frees a finalized communicator ({@code ncclCommDestroy}). */
    int destroy();

    /** Makes the communicator's kernels return and frees it ({@code ncclCommAbort}). */
    int abort();

    /** Returns NCCL's text for a result code. */
    String describe(int result);
}
