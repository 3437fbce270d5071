package ai.djl.fsdp.dist.nccl;

import ai.djl.fsdp.dist.CollectiveException;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.bytedeco.cuda.global.nccl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a communicator's queued collectives from a daemon thread, since the host does not wait
 * for them: it polls {@code ncclCommGetAsyncError} and the oldest collective's age, and on a
 * reported error or a collective older than the timeout it aborts the communicator ({@code
 * ncclCommAbort}, which makes the GPU's stuck kernels return) and keeps the failure, naming the
 * rank and the collective, for every later call to throw. Nothing waits endlessly on a lost peer.
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
    private final Duration timeout;
    private final Queue<NcclWork> pending = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile CollectiveException failure;
    private boolean stopped;

    NcclWatchdog(Communicator comm, int rank, Duration timeout) {
        this.comm = comm;
        this.rank = rank;
        this.timeout = timeout;
        thread = new Thread(this::run, "nccl-watchdog-rank-" + rank);
        thread.setDaemon(true);
        thread.start();
    }

    /** Starts watching a collective that was just queued. */
    void watch(NcclWork work) {
        pending.add(work);
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
     * meanwhile, which happens at the latest after the timeout.
     */
    void awaitOnHost(NcclWork work) {
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
        for (NcclWork work = pending.peek(); work != null; work = pending.peek()) {
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
     * One look: drop finished collectives, then fail on a reported error or an overdue one. Holds
     * the watchdog's lock, so that {@link #close()} returns only once no look is under way.
     */
    synchronized void poll() {
        if (stopped || failure != null) {
            return;
        }
        try {
            pending.removeIf(NcclWork::poll);
        } catch (CollectiveException e) {
            fail(e.getMessage());
            return;
        }
        NcclWork oldest = pending.peek();
        int error = comm.asyncError();
        if (error != nccl.ncclSuccess && error != nccl.ncclInProgress) {
            fail(
                    comm.describe(error)
                            + " on rank "
                            + rank
                            + (oldest == null ? "" : " during " + oldest.name())
                            + " (a peer failed or left the job)");
        } else if (oldest != null && oldest.ageNanos() > timeout.toNanos()) {
            fail(
                    oldest.name()
                            + " did not finish on rank "
                            + rank
                            + " within "
                            + timeout.toSeconds()
                            + " s (ProcessGroupOptions.optTimeout): a peer is gone, stuck, or"
                            + " called a different collective");
        }
    }

    private void fail(String message) {
        failure = new CollectiveException("NCCL communicator aborted: " + message);
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
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
