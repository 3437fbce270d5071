package ai.djl.fsdp.testing;

import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.launch.GpuSharing;
import ai.djl.fsdp.launch.LaunchedJob;
import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.launch.RankFailedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * A job of N ranks on this machine for multi-process tests, started by the project's {@link
 * Launcher} (so tests run the ranks exactly as {@code bin/fsdp launch} does): each rank is a JVM
 * running a given main class on the test class path, with a small heap and one DJL thread, on the
 * CPU unless {@code env(RankDevice.DEVICE_VARIABLE, "gpu")} asks for GPUs (so a GPU host still
 * tests the socket ring), or {@value #DEVICE_VARIABLE}{@code =gpu} puts every job's ranks on GPUs
 * (the GPU kit, with {@code DJL_FSDP_RANKS_PER_GPU} for several ranks per GPU, which then get the
 * NCCL variables {@code bin/fsdp launch} gives them), and its standard output and error in a file
 * that the results carry as text.
 *
 * <pre>{@code
 * try (RankProcesses job = RankProcesses.builder(MyRankMain.class).worldSize(3).start()) {
 *     job.await().assertAllSucceeded();
 * }
 * }</pre>
 *
 * <p>Every wait is bounded: past the job's timeout all ranks are stopped and the results say so.
 */
public final class RankProcesses implements AutoCloseable {

    /** The environment variable that sets the ranks' default device kind: {@code cpu} or gpu. */
    public static final String DEVICE_VARIABLE = "DJL_FSDP_TEST_DEVICE";

    /** How long a rank gets to exit after SIGTERM when the job is stopped; a test needs no more. */
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(2);

    private final LaunchedJob job;
    private final Path logDirectory;
    private final long deadlineNanos;
    private final Duration timeout;

    private RankProcesses(LaunchedJob job, Path logDirectory, Duration timeout) {
        this.job = job;
        this.logDirectory = logDirectory;
        this.timeout = timeout;
        deadlineNanos = System.nanoTime() + timeout.toNanos();
    }

    /**
     * Returns the class path to give rank JVMs. Surefire may run tests from a manifest-only jar; it
     * then names the real class path in {@code surefire.test.class.path}.
     */
    public static String classPath() {
        String surefire = System.getProperty("surefire.test.class.path");
        return surefire != null && !surefire.isEmpty()
                ? surefire
                : System.getProperty("java.class.path");
    }

    /** Returns a builder for a job whose ranks run {@code mainClass}. */
    public static Builder builder(Class<?> mainClass) {
        return new Builder(mainClass);
    }

    /** Returns the number of ranks. */
    public int worldSize() {
        return job.getRanks().size();
    }

    /**
     * Waits until rank {@code rank} has printed {@code text}, for at most {@code wait}.
     *
     * @throws AssertionError if it did not, with the rank's output so far
     */
    public void awaitOutput(int rank, String text, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (!output(rank).contains(text)) {
            // Read once more after the exit: the last lines may have landed meanwhile.
            if (System.nanoTime() > deadline
                    || !job.process(rank).isAlive() && !output(rank).contains(text)) {
                throw new AssertionError(
                        "rank "
                                + rank
                                + " did not print '"
                                + text
                                + "' within "
                                + wait
                                + "; its output:\n"
                                + output(rank));
            }
            sleep(50);
        }
    }

    /** Returns whether rank {@code rank}'s process still runs. */
    public boolean isAlive(int rank) {
        return job.process(rank).isAlive();
    }

    /** Returns the process id of rank {@code rank}. */
    public long pid(int rank) {
        return job.process(rank).pid();
    }

    /**
     * Sends rank {@code rank} a signal by name, such as {@code STOP} (it freezes, as under a
     * debugger or a frozen machine) or {@code CONT}.
     */
    public void signal(int rank, String signal) {
        signal(pid(rank), signal);
    }

    /** Sends the process {@code pid} a signal by name with {@code kill}. */
    public static void signal(long pid, String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start();
            if (kill.waitFor() != 0) {
                throw new AssertionError("kill -" + signal + " " + pid + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * Waits as the launcher does until a rank fails or all succeed, then stops the others.
     *
     * @return the launcher's report of the rank that failed first
     * @throws AssertionError if every rank succeeded
     */
    public RankFailedException awaitLauncherFailure() {
        try {
            job.awaitSuccess();
        } catch (RankFailedException e) {
            return e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
        throw new AssertionError("every rank succeeded");
    }

    /** Kills rank {@code rank} at once, as a crash or an out-of-memory kill would. */
    public void kill(int rank) {
        job.process(rank).destroyForcibly();
    }

    /**
     * Waits for every rank to exit, stopping all of them once the job's timeout has passed.
     *
     * @return each rank's exit code and output
     */
    public Results await() {
        boolean exited;
        try {
            exited =
                    job.awaitExit(Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            exited = false;
        }
        if (!exited) {
            job.stop();
        }
        List<RankResult> results = new ArrayList<>();
        for (int rank : job.getRanks()) {
            Process process = job.process(rank);
            results.add(
                    new RankResult(
                            rank, process.isAlive() ? -1 : process.exitValue(), output(rank)));
        }
        return new Results(results, exited ? null : timeout);
    }

    private String output(int rank) {
        try {
            return Files.readString(
                    logDirectory.resolve(Launcher.logFileName(rank)), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }

    /** Stops any rank still running and deletes the output files. */
    @Override
    public void close() {
        job.close();
        try (Stream<Path> files = Files.walk(logDirectory)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // A leftover folder in the temporary directory harms no later test.
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** One rank's exit code (-1 if it was still running when stopped) and output. */
    public static final class RankResult {
        private final int rank;
        private final int exitCode;
        private final String output;

        RankResult(int rank, int exitCode, String output) {
            this.rank = rank;
            this.exitCode = exitCode;
            this.output = output;
        }

        /** Returns the rank. */
        public int rank() {
            return rank;
        }

        /** Returns the exit code; -1 if the rank was still running when the job was stopped. */
        public int exitCode() {
            return exitCode;
        }

        /** Returns what the rank printed on standard output and error. */
        public String output() {
            return output;
        }
    }

    /** The ranks' results, in rank order. */
    public static final class Results {
        private final List<RankResult> ranks;
        private final Duration timedOutAfter;

        Results(List<RankResult> ranks, Duration timedOutAfter) {
            this.ranks = ranks;
            this.timedOutAfter = timedOutAfter;
        }

        /** Returns rank {@code rank}'s result. */
        public RankResult rank(int rank) {
            return ranks.get(rank);
        }

        /** Returns all ranks' results. */
        public List<RankResult> all() {
            return ranks;
        }

        /** Returns whether the job ran past its timeout and was stopped. */
        public boolean timedOut() {
            return timedOutAfter != null;
        }

        /**
         * Requires that the job finished in time and every rank exited with 0.
         *
         * @throws AssertionError otherwise, with every rank's output
         */
        public Results assertAllSucceeded() {
            boolean ok = !timedOut() && ranks.stream().allMatch(r -> r.exitCode == 0);
            if (!ok) {
                throw new AssertionError(describe());
            }
            return this;
        }

        /** Returns every rank's exit code and output, for failure messages. */
        public String describe() {
            StringBuilder text = new StringBuilder();
            if (timedOut()) {
                text.append("The job was stopped after ").append(timedOutAfter).append('\n');
            }
            for (RankResult r : ranks) {
                text.append("---- rank ")
                        .append(r.rank)
                        .append(" exit ")
                        .append(r.exitCode)
                        .append(" ----\n")
                        .append(r.output)
                        .append('\n');
            }
            return text.toString();
        }
    }

    /** Configures and starts a {@link RankProcesses} job. */
    public static final class Builder {
        private final Class<?> mainClass;
        private int worldSize = 2;
        private final List<String> args = new ArrayList<>();
        private final List<String> jvmOptions =
                new ArrayList<>(List.of("-Xmx512m", "-XX:+UseSerialGC"));
        private final Map<String, String> environment =
                new LinkedHashMap<>(
                        Map.of(
                                RankDevice.DEVICE_VARIABLE,
                                Objects.requireNonNullElse(System.getenv(DEVICE_VARIABLE), "cpu")));
        private Duration timeout = Duration.ofMinutes(2);
        private Integer masterPort;
        private String jobToken;
        private String runId;

        Builder(Class<?> mainClass) {
            this.mainClass = Objects.requireNonNull(mainClass, "mainClass");
        }

        /** Sets the number of ranks; the default is 2. */
        public Builder worldSize(int worldSize) {
            if (worldSize < 1) {
                throw new IllegalArgumentException("worldSize must be at least 1: " + worldSize);
            }
            this.worldSize = worldSize;
            return this;
        }

        /** Sets the arguments every rank's main method receives. */
        public Builder args(String... args) {
            this.args.clear();
            this.args.addAll(Arrays.asList(args));
            return this;
        }

        /** Adds JVM options for every rank, after the defaults (so they win). */
        public Builder jvmOptions(String... options) {
            jvmOptions.addAll(Arrays.asList(options));
            return this;
        }

        /** Sets an environment variable for every rank, on top of this JVM's environment. */
        public Builder env(String name, String value) {
            environment.put(name, value);
            return this;
        }

        /** Sets the store's port; the default is a free one. */
        public Builder masterPort(int masterPort) {
            this.masterPort = masterPort;
            return this;
        }

        /** Sets the job token and the run id; the defaults are fresh random ones. */
        public Builder jobTokenAndRunId(String jobToken, String runId) {
            this.jobToken = jobToken;
            this.runId = runId;
            return this;
        }

        /** Sets how long the whole job may run before all ranks are stopped; default 2 minutes. */
        public Builder timeout(Duration timeout) {
            this.timeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /** Starts every rank. */
        public RankProcesses start() {
            Path logDirectory;
            try {
                logDirectory = Files.createTempDirectory("ranks-" + mainClass.getSimpleName());
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "could not create a folder for the ranks' output", e);
            }
            List<String> command = new ArrayList<>();
            command.add(mainClass.getName());
            command.addAll(args);
            Launcher.Builder launcher =
                    Launcher.builder()
                            .setNprocPerNode(worldSize)
                            .setCommand(command)
                            .optThreadsPerRank(1)
                            .optJavaOptions(jvmOptions)
                            .optClassPath(RankProcesses.classPath())
                            .optLogDirectory(logDirectory)
                            .optStopTimeout(STOP_TIMEOUT);
            environment.forEach(launcher::optEnvironment);
            if (!"cpu".equalsIgnoreCase(environment.get(RankDevice.DEVICE_VARIABLE).trim())) {
                GpuSharing sharing = GpuSharing.forNode(null, System.getenv(), 0, false);
                if (sharing != null) {
                    launcher.optGpuSharing(sharing);
                }
            }
            if (masterPort != null) {
                launcher.optMasterPort(masterPort);
            }
            if (jobToken != null) {
                launcher.optJobToken(jobToken).optRunId(runId);
            }
            return new RankProcesses(launcher.build().start(), logDirectory, timeout);
        }
    }
}
