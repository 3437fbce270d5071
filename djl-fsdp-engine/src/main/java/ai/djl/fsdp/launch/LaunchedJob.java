package ai.djl.fsdp.launch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The ranks one {@link Launcher#start} started on this node: a handle on each rank's process, a
 * wait for them all, and a stop. Until it is closed, shutting this JVM down (Ctrl-C) stops the
 * ranks as well.
 *
 * <pre>{@code
 * try (LaunchedJob job = launcher.start()) {
 *     job.awaitSuccess();
 * }
 * }</pre>
 */
public final class LaunchedJob implements AutoCloseable {

    private final Map<Integer, RankProcess> ranks = new LinkedHashMap<>();
    private final BlockingQueue<RankProcess> exited = new LinkedBlockingQueue<>();
    private final Duration stopTimeout;
    private final Thread stopOnShutdown;
    private volatile boolean stopped;

    LaunchedJob(Duration stopTimeout) {
        this.stopTimeout = stopTimeout;
        stopOnShutdown = new Thread(this::stop, "fsdp-launch-shutdown");
        Runtime.getRuntime().addShutdownHook(stopOnShutdown);
    }

    /** Adds a rank that has just started; called only while the launcher starts the job. */
    synchronized void add(RankProcess rank) {
        ranks.put(rank.rank, rank);
        rank.process.onExit().thenRun(() -> exited.add(rank));
    }

    /**
     * Returns the global ranks this job started, in start order.
     *
     * @return the ranks
     */
    public synchronized List<Integer> ranks() {
        return List.copyOf(ranks.keySet());
    }

    /**
     * Returns the process of one rank, for instance to watch it or to kill it as a crash would.
     *
     * @param rank a global rank this job started
     * @return its process
     */
    public synchronized Process process(int rank) {
        RankProcess started = ranks.get(rank);
        if (started == null) {
            throw new IllegalArgumentException(
                    "This job started ranks " + ranks.keySet() + ", not rank " + rank);
        }
        return started.process;
    }

    /**
     * Waits until every rank has exited, whatever its exit code.
     *
     * @param timeout how long to wait at most
     * @return false if a rank was still running when the time ran out
     * @throws InterruptedException if interrupted while waiting
     */
    public boolean awaitExit(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (RankProcess rank : snapshot()) {
            long left = Math.max(0, deadline - System.nanoTime());
            if (!rank.process.waitFor(left, TimeUnit.NANOSECONDS)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Waits until every rank has exited with 0; the first to exit otherwise ends the wait, and the
     * job is stopped.
     *
     * @throws RankFailedException if a rank exited with a non-zero code, or the job was stopped
     * @throws InterruptedException if interrupted while waiting (the ranks are stopped)
     */
    public void awaitSuccess() throws InterruptedException {
        try {
            for (int i = 0, count = snapshot().size(); i < count; i++) {
                RankProcess rank = exited.take();
                int code = rank.process.exitValue();
                if (code != 0) {
                    // A rank ended by our own stop (Ctrl-C on the launcher) did not fail.
                    throw stopped
                            ? RankFailedException.stopped(rank.rank, code)
                            : new RankFailedException(rank.rank, code);
                }
            }
        } finally {
            stop();
        }
    }

    /**
     * Asks every live rank (and anything it started) to terminate, kills what is still alive after
     * the launcher's stop timeout, and waits for the ranks' output to be copied. Safe to call from
     * any thread, and again.
     */
    public void stop() {
        stopped = true;
        List<RankProcess> alive = new ArrayList<>();
        for (RankProcess rank : snapshot()) {
            if (rank.process.isAlive()) {
                rank.process.descendants().forEach(ProcessHandle::destroy);
                rank.process.destroy();
                alive.add(rank);
            }
        }
        long deadline = System.nanoTime() + stopTimeout.toNanos();
        try {
            for (RankProcess rank : alive) {
                long left = Math.max(0, deadline - System.nanoTime());
                if (!rank.process.waitFor(left, TimeUnit.NANOSECONDS)) {
                    rank.process.descendants().forEach(ProcessHandle::destroyForcibly);
                    rank.process.destroyForcibly().waitFor();
                }
            }
            for (RankProcess rank : snapshot()) {
                rank.awaitOutput(stopTimeout);
            }
        } catch (InterruptedException e) {
            alive.forEach(rank -> rank.process.destroyForcibly());
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the ranks that still run and forgets the shutdown hook. */
    @Override
    public void close() {
        stop();
        try {
            Runtime.getRuntime().removeShutdownHook(stopOnShutdown);
        } catch (IllegalStateException e) {
            // The JVM is already shutting down and the hook is running: nothing to undo.
        }
    }

    private synchronized List<RankProcess> snapshot() {
        return new ArrayList<>(ranks.values());
    }

    /** One started rank: its process and the threads copying its output (none into a log file). */
    static final class RankProcess {

        final int rank;
        final Process process;
        private final List<LinePrefixer> copies;

        RankProcess(int rank, Process process, List<LinePrefixer> copies) {
            this.rank = rank;
            this.process = process;
            this.copies = Collections.unmodifiableList(copies);
        }

        void awaitOutput(Duration timeout) throws InterruptedException {
            for (LinePrefixer copy : copies) {
                copy.join(timeout.toMillis());
            }
        }
    }
}
