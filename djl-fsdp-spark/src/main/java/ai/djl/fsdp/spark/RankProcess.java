package ai.djl.fsdp.spark;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.launch.rank.FailureReport;
import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.TaskContext;

/**
 * Runs a rank's main class in a JVM of its own, started by the barrier task as {@code bin/fsdp
 * launch} starts a rank: the same {@code java}, the executor's class path (its jars and the
 * application's), one intra-op thread per task core, and the variables that place it in the job
 * ({@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code
 * MASTER_ADDR}, {@code MASTER_PORT}, the job token and run id), set on the child alone. The
 * executor is the rank's launcher: a rank whose executor dies exits within about a second, and a
 * task that Spark kills stops its rank. The rank's output goes to the executor's log.
 */
final class RankProcess implements PartitionFunction<Object, Integer> {

    private static final long serialVersionUID = 1L;

    private static final long STOP_SECONDS = 5;

    private final List<String> mainCommand;
    private final List<String> javaOptions;

    /**
     * Creates the rank's runner.
     *
     * @param mainCommand the main class and its arguments
     * @param javaOptions JVM options for the rank, after its thread settings
     */
    RankProcess(List<String> mainCommand, List<String> javaOptions) {
        this.mainCommand = List.copyOf(mainCommand);
        this.javaOptions = List.copyOf(javaOptions);
    }

    @Override
    public Integer apply(SparkRank rank, Iterator<Object> rows) throws Exception {
        Path report = Files.createTempFile("djl-fsdp-rank" + rank.getEnv().getRank(), ".failure");
        Files.delete(report);
        ProcessBuilder builder = new ProcessBuilder(command(rank)).inheritIO();
        builder.environment().putAll(environment(rank, report));
        Process process = builder.start();
        try {
            int code = await(process);
            if (code != 0) {
                throw new IllegalStateException(
                        "its JVM exited with code " + code + failureMessage(report));
            }
            return code;
        } finally {
            stop(process);
            Files.deleteIfExists(report);
        }
    }

    private List<String> command(SparkRank rank) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Dai.djl.pytorch.num_threads=" + rank.getCpus());
        command.add("-Dai.djl.pytorch.num_interop_threads=1");
        command.addAll(javaOptions);
        command.add("-cp");
        command.add(classPath());
        command.addAll(ResumeFlag.resolve(mainCommand));
        return command;
    }

    /** The variables that place the rank in the job, as {@code bin/fsdp launch} sets them. */
    static Map<String, String> environment(SparkRank rank, Path report) {
        DistributedEnv env = rank.getEnv();
        Map<String, String> variables = new LinkedHashMap<>();
        variables.put("RANK", Integer.toString(env.getRank()));
        variables.put("WORLD_SIZE", Integer.toString(env.getWorldSize()));
        variables.put("LOCAL_RANK", Integer.toString(env.getLocalRank()));
        variables.put("LOCAL_WORLD_SIZE", Integer.toString(env.getLocalWorldSize()));
        variables.put("MASTER_ADDR", env.getMasterAddr());
        variables.put("MASTER_PORT", Integer.toString(env.getMasterPort()));
        variables.put(DistributedEnv.JOB_TOKEN_VARIABLE, env.getJobToken());
        variables.put(DistributedEnv.RUN_ID_VARIABLE, env.getRunId());
        variables.put("OMP_NUM_THREADS", Integer.toString(rank.getCpus()));
        String[] launcher = LauncherWatch.describeThisProcess();
        variables.put(LauncherWatch.PID_VARIABLE, launcher[0]);
        variables.put(LauncherWatch.START_VARIABLE, launcher[1]);
        variables.put(FailureReport.FILE_VARIABLE, report.toString());
        rank.getTimeout()
                .ifPresent(
                        timeout ->
                                variables.put(
                                        ProcessGroupOptions.TIMEOUT_VARIABLE,
                                        Double.toString(timeout.toMillis() / 1000.0)));
        // The task's GPU is the one the rank sees, so it computes on gpu(0).
        rank.getGpu()
                .ifPresent(
                        gpu ->
                                variables.put(
                                        "CUDA_VISIBLE_DEVICES",
                                        Integer.toString(gpu.getDeviceId())));
        return variables;
    }

    /** Waits for the rank, stopping it when Spark kills the task. */
    private static int await(Process process) throws InterruptedException {
        TaskContext task = TaskContext.get();
        while (!process.waitFor(200, TimeUnit.MILLISECONDS)) {
            if (task != null && task.isInterrupted()) {
                stop(process);
                task.killTaskIfInterrupted();
            }
        }
        return process.exitValue();
    }

    private static void stop(Process process) throws InterruptedException {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        if (!process.waitFor(STOP_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
    }

    /** The rank's own message, from the failure report it wrote, if it wrote one. */
    private static String failureMessage(Path report) {
        if (!Files.isRegularFile(report)) {
            return " (it wrote no message: see the executor's log)";
        }
        Properties properties = new Properties();
        try (Reader in = Files.newBufferedReader(report, StandardCharsets.UTF_8)) {
            properties.load(in);
        } catch (IOException e) {
            return " (its failure report is unreadable: " + e.getMessage() + ")";
        }
        return ": " + properties.getProperty("message", "(no message)");
    }

    /**
     * The executor's class path: the jars Spark added for the application (the task's class
     * loaders), then the executor JVM's own.
     */
    private static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (ClassLoader loader = Thread.currentThread().getContextClassLoader();
                loader != null;
                loader = loader.getParent()) {
            if (loader instanceof URLClassLoader urls) {
                for (URL url : urls.getURLs()) {
                    if ("file".equals(url.getProtocol())) {
                        try {
                            entries.add(Path.of(url.toURI()).toString());
                        } catch (URISyntaxException | IllegalArgumentException e) {
                            // Not a local file: the child cannot load it either.
                        }
                    }
                }
            }
        }
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                entries.add(entry);
            }
        }
        return String.join(File.pathSeparator, entries);
    }
}
