package ai.djl.fsdp.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A job of N ranks on this machine for multi-process tests: each rank is a JVM running a given
 * main class on the current class path, with the variables torchrun would set ({@code RANK},
 * {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code MASTER_ADDR=127.0.0.1},
 * a free {@code MASTER_PORT}) and a fresh {@code DJL_FSDP_JOB_TOKEN}, a small heap and one DJL
 * thread.
 *
 * <pre>{@code
 * try (RankProcesses job = RankProcesses.builder(MyRankMain.class).worldSize(3).start()) {
 *     job.await().assertAllSucceeded();
 * }
 * }</pre>
 *
 * <p>Every wait is bounded: past the job's timeout all ranks are killed and the results say so.
 * Each rank's standard output and error go to a file that the results carry as text.
 */
public final class RankProcesses implements AutoCloseable {

    private final List<Process> processes;
    private final List<Path> logs;
    private final long deadlineNanos;
    private final Duration timeout;

    private RankProcesses(List<Process> processes, List<Path> logs, Duration timeout) {
        this.processes = processes;
        this.logs = logs;
        this.timeout = timeout;
        deadlineNanos = System.nanoTime() + timeout.toNanos();
    }

    /** Returns a builder for a job whose ranks run {@code mainClass}. */
    public static Builder builder(Class<?> mainClass) {
        return new Builder(mainClass);
    }

    /** Returns a free TCP port on this machine (free now; another process may take it later). */
    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the number of ranks. */
    public int worldSize() {
        return processes.size();
    }

    /**
     * Waits until rank {@code rank} has printed {@code text}, for at most {@code wait}.
     *
     * @throws AssertionError if it did not, with the rank's output so far
     */
    public void awaitOutput(int rank, String text, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (!output(rank).contains(text)) {
            if (System.nanoTime() > deadline || !processes.get(rank).isAlive()
                    && !output(rank).contains(text)) {
                throw new AssertionError("rank " + rank + " did not print '" + text + "' within "
                        + wait + "; its output:\n" + output(rank));
            }
            sleep(50);
        }
    }

    /** Kills rank {@code rank} at once, as a crash or an out-of-memory kill would. */
    public void kill(int rank) {
        processes.get(rank).destroyForcibly();
    }

    /**
     * Waits for every rank to exit, killing all of them once the job's timeout has passed.
     *
     * @return each rank's exit code and output
     */
    public Results await() {
        boolean timedOut = false;
        for (Process process : processes) {
            long left = deadlineNanos - System.nanoTime();
            try {
                if (!process.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                    timedOut = true;
                    break;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                timedOut = true;
                break;
            }
        }
        if (timedOut) {
            killAll();
        }
        List<RankResult> results = new ArrayList<>();
        for (int rank = 0; rank < processes.size(); rank++) {
            Process process = processes.get(rank);
            results.add(new RankResult(rank, process.isAlive() ? -1 : process.exitValue(),
                    output(rank)));
        }
        return new Results(results, timedOut ? timeout : null);
    }

    private String output(int rank) {
        try {
            return Files.readString(logs.get(rank), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }

    private void killAll() {
        for (Process process : processes) {
            process.destroyForcibly();
        }
        for (Process process : processes) {
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Kills any rank still running and deletes the output files. */
    @Override
    public void close() {
        killAll();
        for (Path log : logs) {
            try {
                Files.deleteIfExists(log);
            } catch (IOException e) {
                // A leftover file in the temporary folder harms no later test.
            }
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

    /** One rank's exit code (-1 if it was still running when killed) and output. */
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

        /** Returns the exit code; -1 if the rank was still running when the job was killed. */
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

        /** Returns whether the job ran past its timeout and was killed. */
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
                text.append("The job was killed after ").append(timedOutAfter).append('\n');
            }
            for (RankResult r : ranks) {
                text.append("---- rank ").append(r.rank).append(" exit ").append(r.exitCode)
                        .append(" ----\n").append(r.output).append('\n');
            }
            return text.toString();
        }
    }

    /** Configures and starts a {@link RankProcesses} job. */
    public static final class Builder {
        private final Class<?> mainClass;
        private int worldSize = 2;
        private final List<String> args = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>();
        private final Map<String, String> environment = new LinkedHashMap<>();
        private Duration timeout = Duration.ofMinutes(2);

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

        /** Sets an environment variable for every rank, overriding the job's own. */
        public Builder env(String name, String value) {
            environment.put(name, value);
            return this;
        }

        /** Sets how long the whole job may run before all ranks are killed; default 2 minutes. */
        public Builder timeout(Duration timeout) {
            this.timeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /** Starts every rank. */
        public RankProcesses start() {
            String port = Integer.toString(freePort());
            String token = UUID.randomUUID().toString();
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<Process> processes = new ArrayList<>();
            List<Path> logs = new ArrayList<>();
            try {
                for (int rank = 0; rank < worldSize; rank++) {
                    List<String> command = new ArrayList<>(List.of(java, "-Xmx512m",
                            "-XX:+UseSerialGC", "-Dai.djl.pytorch.num_threads=1",
                            "-Dai.djl.pytorch.num_interop_threads=1", "-cp", classPath()));
                    command.addAll(jvmOptions);
                    command.add(mainClass.getName());
                    command.addAll(args);
                    Path log = Files.createTempFile("rank" + rank + '-', ".log");
                    logs.add(log);
                    ProcessBuilder builder = new ProcessBuilder(command)
                            .redirectErrorStream(true)
                            .redirectOutput(log.toFile());
                    Map<String, String> env = builder.environment();
                    env.put("RANK", Integer.toString(rank));
                    env.put("WORLD_SIZE", Integer.toString(worldSize));
                    env.put("LOCAL_RANK", Integer.toString(rank));
                    env.put("LOCAL_WORLD_SIZE", Integer.toString(worldSize));
                    env.put("MASTER_ADDR", "127.0.0.1");
                    env.put("MASTER_PORT", port);
                    env.put("DJL_FSDP_JOB_TOKEN", token);
                    env.put("OMP_NUM_THREADS", "1");
                    env.putAll(environment);
                    processes.add(builder.start());
                }
            } catch (IOException e) {
                processes.forEach(Process::destroyForcibly);
                throw new UncheckedIOException("could not start the ranks of " + mainClass, e);
            }
            return new RankProcesses(processes, logs, timeout);
        }

        /**
         * Returns the class path to give the ranks. Surefire may run tests from a manifest-only
         * jar; it then names the real class path in {@code surefire.test.class.path}.
         */
        private static String classPath() {
            String surefire = System.getProperty("surefire.test.class.path");
            return surefire != null && !surefire.isEmpty()
                    ? surefire : System.getProperty("java.class.path");
        }
    }
}
