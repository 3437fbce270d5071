package ai.djl.fsdp.launch;

import ai.djl.fsdp.launch.rank.FailureReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

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
    private final Path reportDirectory;
    private final Thread stopOnShutdown;
    private volatile boolean stopped;

    LaunchedJob(Duration stopTimeout, Path reportDirectory) {
        this.stopTimeout = stopTimeout;
        this.reportDirectory = reportDirectory;
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
    public synchronized List<Integer> getRanks() {
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
                            : firstFailure(rank, code);
                }
            }
        } finally {
            stop();
        }
    }

    /**
     * Returns the failure to report when {@code first} is the first rank seen to fail. When its
     * report blames another rank of this node, that rank failed first: it gets the stop timeout to
     * exit and report for itself; one still running then has stopped (SIGSTOP) or hangs.
     */
    private RankFailedException firstFailure(RankProcess first, int code)
            throws InterruptedException {
        Optional<FailureReport> report = first.report();
        String message = report.map(FailureReport::message).orElse(null);
        OptionalInt blamed = report.map(FailureReport::failedRank).orElse(OptionalInt.empty());
        if (blamed.isEmpty() || blamed.getAsInt() == first.rank) {
            return new RankFailedException(first.rank, code, message);
        }
        int culpritRank = blamed.getAsInt();
        RankProcess culprit;
        synchronized (this) {
            culprit = ranks.get(culpritRank);
        }
        if (culprit == null) {
            return new RankFailedException(
                    first.rank,
                    code,
                    message + " (rank " + culpritRank + " runs on another node: see its launcher)");
        }
        if (culprit.process.waitFor(stopTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
            int culpritCode = culprit.process.exitValue();
            if (culpritCode != 0) {
                return new RankFailedException(
                        culpritRank,
                        culpritCode,
                        culprit.report().map(FailureReport::message).orElse(null));
            }
        }
        return new RankFailedException(
                "rank "
                        + culpritRank
                        + " failed first"
                        + (culprit.process.isAlive()
                                ? " and is still running but not answering (stopped or hung)"
                                : "")
                        + "; rank "
                        + first.rank
                        + " "
                        + RankFailedException.describeExit(code)
                        + ": "
                        + message
                        + "; stopped the other ranks",
                culpritRank,
                code);
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
        try (Stream<Path> reports = Files.list(reportDirectory)) {
            for (Path report : (Iterable<Path>) reports::iterator) {
                Files.deleteIfExists(report);
            }
            Files.deleteIfExists(reportDirectory);
        } catch (IOException e) {
            // A few bytes left in the temporary directory.
        }
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
        private final Path reportFile;

        RankProcess(int rank, Process process, List<LinePrefixer> copies, Path reportFile) {
            this.rank = rank;
            this.process = process;
            this.copies = Collections.unmodifiableList(copies);
            this.reportFile = reportFile;
        }

        Optional<FailureReport> report() {
            return FailureReport.read(reportFile);
        }

        void awaitOutput(Duration timeout) throws InterruptedException {
            for (LinePrefixer copy : copies) {
                copy.join(timeout.toMillis());
            }
        }
    }
}
