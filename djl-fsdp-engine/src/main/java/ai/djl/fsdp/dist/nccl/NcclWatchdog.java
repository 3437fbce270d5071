package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.JobAbort;
import ai.djl.fsdp.dist.Threads;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.UnaryOperator;
import org.bytedeco.cuda.global.nccl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a communicator's queued collectives from a daemon thread, since the host does not wait
 * for them: it polls {@code ncclCommGetAsyncError} and the oldest collective's age, and on a
 * reported error, on the job's failure handed to {@link #abort(JobAbort.Cause)} (a peer whose
 * heartbeats stopped, found by the job's {@link ai.djl.fsdp.dist.HeartbeatWatchdog}), or on a
 * collective older than the collective timeout (its peers alive but one of them stuck, or calling
 * another collective) it aborts the communicator ({@code ncclCommAbort}, which makes the GPU's
 * stuck kernels return) and keeps the failure, naming the rank at fault where there is one and the
 * collective, for every later call to throw. Nothing waits endlessly on a lost peer. A failure it
 * finds itself (an error, an overdue collective) it first records as the job's ({@link JobAbort}),
 * so that every other rank's heartbeats read it and fail with it; a cause another rank recorded
 * first is the one it fails with.
 *
 * <p>{@link #close()} stops the thread and waits for it before it returns: the group finalizes,
 * destroys or aborts the communicator only then, never while a poll may still use it.
 */
final class NcclWatchdog implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(NcclWatchdog.class);

    /** How often the thread looks; short against any timeout, long against a CUDA query. */
    private static final long POLL_MILLIS = 20;

    private final Communicator comm;
    private final int rank;
    private final Duration collectiveTimeout;
    private final UnaryOperator<JobAbort.Cause> record;
    private final Queue<QueuedCollective> pending = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile JobAbort.Cause jobFailure;
    private volatile String lastQueued;
    private volatile CollectiveException failure;
    private boolean stopped;

    /**
     * Starts watching a communicator.
     *
     * @param comm the communicator
     * @param rank this rank in the job, for messages
     * @param collectiveTimeout the longest a queued collective may take
     * @param record records a failure the watchdog found as the job's and returns the cause every
     *     rank fails with ({@link JobAbort#agreeOnClient})
     */
    NcclWatchdog(
            Communicator comm,
            int rank,
            Duration collectiveTimeout,
            UnaryOperator<JobAbort.Cause> record) {
        this.comm = comm;
        this.rank = rank;
        this.collectiveTimeout = collectiveTimeout;
        this.record = record;
        thread = new Thread(this::run, "nccl-watchdog-rank-" + rank);
        thread.setDaemon(true);
        thread.start();
    }

    /** Starts watching a collective that was just queued. */
    void watch(QueuedCollective work) {
        lastQueued = work.name();
        pending.add(work);
    }

    /**
     * Hands over the job's failure (from any thread): the next look aborts the communicator, if it
     * has not failed already, with {@code cause}'s message and rank.
     */
    void abort(JobAbort.Cause cause) {
        jobFailure = cause;
    }

    /** Throws the communicator's failure, if it has failed. */
    void check() {
        CollectiveException failed = failure;
        if (failed != null) {
            throw new CollectiveException(failed.getMessage(), failed);
        }
    }

    /** Returns whether the communicator was aborted (it must not be finalized then). */
    boolean aborted() {
        return failure != null;
    }

    /**
     * Blocks the host until {@code work} has finished; throws the failure if the communicator fails
     * meanwhile, which happens at the latest after the collective timeout.
     */
    void awaitOnHost(QueuedCollective work) {
        while (!work.poll()) {
            check();
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectiveException(
                        "Interrupted on rank " + rank + " while waiting for " + work.name(), e);
            }
        }
        check();
    }

    /**
     * Blocks the host until every collective queued so far has finished; throws the failure if the
     * communicator fails meanwhile.
     */
    void awaitPending() {
        for (QueuedCollective work = pending.peek(); work != null; work = pending.peek()) {
            awaitOnHost(work);
            pending.remove(work);
        }
    }

    private void run() {
        comm.bindThread();
        while (isWatching()) {
            poll();
            try {
                Thread.sleep(POLL_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private synchronized boolean isWatching() {
        return !stopped && failure == null;
    }

    /**
     * One look: drop finished collectives, then fail on the job's failure, a reported error or an
     * overdue collective. Holds the watchdog's lock, so that {@link #close()} returns only once no
     * look is under way.
     */
    synchronized void poll() {
        if (stopped || failure != null) {
            return;
        }
        try {
            pending.removeIf(QueuedCollective::poll);
        } catch (CollectiveException e) {
            failFound(e.getMessage(), pending.peek());
            return;
        }
        QueuedCollective oldest = pending.peek();
        JobAbort.Cause cause = jobFailure;
        int error = comm.asyncError();
        if (cause != null) {
            fail(cause, oldest);
        } else if (error != nccl.ncclSuccess && error != nccl.ncclInProgress) {
            failFound(
                    comm.describe(error)
                            + " on rank "
                            + rank
                            + (oldest == null ? "" : " during " + oldest.name())
                            + " (a peer failed or left the job)",
                    oldest);
        } else if (oldest != null && oldest.ageNanos() > collectiveTimeout.toNanos()) {
            failFound(
                    oldest.name()
                            + " did not finish on rank "
                            + rank
                            + " within "
                            + collectiveTimeout.toSeconds()
                            + " s (ProcessGroupOptions.optCollectiveTimeout): a peer is stuck, or"
                            + " called a different collective (a stopped one is found sooner, by"
                            + " its missing heartbeats)",
                    oldest);
        }
    }

    /**
     * Fails on what this watchdog found, recorded first as the job's failure, blaming no rank; or
     * on the cause another rank recorded before.
     */
    private void failFound(String message, QueuedCollective oldest) {
        JobAbort.Cause ours = new JobAbort.Cause(-1, message);
        JobAbort.Cause agreed = record.apply(ours);
        if (agreed.equals(ours)) {
            fail(": " + message, -1);
        } else {
            fail(agreed, oldest);
        }
    }

    /** Fails on the job's failure, naming this rank and where it stood. */
    private void fail(JobAbort.Cause cause, QueuedCollective oldest) {
        fail(" on rank " + rank + where(oldest) + ": " + cause.message(), cause.rank());
    }

    /** Returns the collective in flight, or the last one queued, for a message. */
    private String where(QueuedCollective oldest) {
        if (oldest != null) {
            return " in " + oldest.name();
        }
        String last = lastQueued;
        return last == null ? " before the first collective" : " after " + last;
    }

    private void fail(String detail, int failedRank) {
        failure = new CollectiveException("NCCL communicator aborted" + detail, null, failedRank);
        logger.error("{}", failure.getMessage());
        comm.abort();
    }

    /**
     * Stops the thread and waits for it to end; the communicator stays as it is, and no call of the
     * watchdog's uses it from now on.
     */
    @Override
    public void close() {
        synchronized (this) {
            stopped = true;
        }
        thread.interrupt();
        Threads.joinUninterruptibly(thread);
    }
}
