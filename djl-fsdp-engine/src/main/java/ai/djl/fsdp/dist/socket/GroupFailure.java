package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.JobAbort;
import ai.djl.fsdp.rendezvous.Store;
import ai.djl.fsdp.rendezvous.StoreException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The failure of a {@link SocketProcessGroup}, once it has one: the cause the ranks agree on
 * through the store ({@link JobAbort}; the first rank to notice wins), or the one its {@link
 * ai.djl.fsdp.dist.HeartbeatWatchdog} found, whichever comes first. Recording it closes the ring,
 * so that the collective in flight fails and the neighbours notice; every later collective fails
 * with the same error.
 */
final class GroupFailure {

    private static final Logger logger = LoggerFactory.getLogger(GroupFailure.class);

    private final Store store;
    private final int rank;
    private final Duration timeout;
    private final Ring ring;
    private final CompletableFuture<JobAbort.Cause> aborted = new CompletableFuture<>();
    private volatile CollectiveException failure;
    private volatile boolean storeLost;

    /**
     * Makes the failure state of a group.
     *
     * @param store the job's store, where the ranks agree on the cause
     * @param rank this rank
     * @param timeout how long to wait for the agreement
     * @param ring the group's ring, closed on a failure; null for a group of one
     */
    GroupFailure(Store store, int rank, Duration timeout, Ring ring) {
        this.store = store;
        this.rank = rank;
        this.timeout = timeout;
        this.ring = ring;
    }

    /**
     * Called by the watchdog with the job's failure: records it as this group's, and closes the
     * ring so that the collective in flight, if any, fails with it.
     */
    void abort(JobAbort.Cause cause) {
        aborted.complete(cause);
        if (ring != null) {
            ring.close();
        }
    }

    /** Returns the error every collective now fails with, or null while the group is sound. */
    CollectiveException get() {
        return failure;
    }

    /** Returns whether the job failed, as this rank saw it or as the watchdog reported it. */
    boolean isFailed() {
        return failure != null || aborted.isDone();
    }

    /** Returns whether the failure is that the store became unreachable. */
    boolean isStoreLost() {
        if (storeLost) {
            return true;
        }
        JobAbort.Cause cause = aborted.getNow(null);
        return cause != null && cause.message().contains(JobAbort.STORE_LOST);
    }

    /**
     * Agrees with the other ranks on the cause of a failure seen on a link (or adopts the
     * watchdog's, whichever comes first), closes the ring so the neighbours notice, and returns the
     * error every later collective fails with.
     *
     * @param cause what this rank saw
     * @param where the collective that was running, or the last one
     * @return the error, or null if interrupted while waiting for the agreement
     */
    CollectiveException fail(PeerFailure cause, Supplier<String> where) {
        if (!aborted.isDone()) {
            JobAbort.Cause ours = new JobAbort.Cause(cause.peer(), cause.getMessage());
            CompletableFuture.runAsync(
                    () -> {
                        try {
                            aborted.complete(JobAbort.agree(store, ours));
                        } catch (StoreException e) {
                            aborted.complete(withLostStore(ours, e));
                        }
                    },
                    task -> new Thread(task, "djl-fsdp-abort-rank" + rank).start());
        }
        JobAbort.Cause agreed;
        try {
            agreed = aborted.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            agreed =
                    withLostStore(
                            new JobAbort.Cause(cause.peer(), cause.getMessage()),
                            new StoreException("it did not answer for " + timeout));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
        return record(agreed, cause, where);
    }

    private synchronized CollectiveException record(
            JobAbort.Cause agreed, Throwable cause, Supplier<String> where) {
        if (failure == null) {
            if (ring != null) {
                ring.close();
            }
            failure =
                    new CollectiveException(
                            "Collective failed on rank "
                                    + rank
                                    + where.get()
                                    + ": "
                                    + agreed.message(),
                            cause,
                            agreed.rank());
            storeLost |= agreed.message().contains(JobAbort.STORE_LOST);
            logger.error(failure.getMessage());
        }
        return failure;
    }

    private static JobAbort.Cause withLostStore(JobAbort.Cause ours, StoreException e) {
        return new JobAbort.Cause(
                ours.rank(),
                ours.message()
                        + " ("
                        + JobAbort.STORE_LOST
                        + " as well, so rank 0, its host, may have failed: "
                        + e.getMessage()
                        + ')');
    }
}
