package ai.djl.fsdp.spark;

import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.fsdp.launch.rank.RankCommand;
import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.TaskContext;

/**
 * Runs a rank's main class in a JVM of its own, started by the barrier task exactly as {@code
 * bin/fsdp launch} starts a rank ({@link RankCommand}): the same {@code java}, the executor's class
 * path (the application's jars, then the executor JVM's), one intra-op thread per task core, the
 * variables that place it in the job, set on the child alone, the malloc settings, and no standard
 * input. The executor is the rank's launcher: a rank whose executor dies exits within about a
 * second, and a task that Spark kills stops its rank. The rank's output goes to the executor's log.
 */
final class RankProcess implements PartitionFunction<Object, Integer> {

    private static final long serialVersionUID = 1L;

    private static final long STOP_SECONDS = 5;

    private final ResumeFlag mainCommand;
    private final List<String> javaOptions;

    /**
     * Creates the rank's runner.
     *
     * @param mainCommand the main class and its arguments, its resume flag resolved per attempt
     * @param javaOptions JVM options for the rank, after its thread settings
     */
    RankProcess(ResumeFlag mainCommand, List<String> javaOptions) {
        this.mainCommand = mainCommand;
        this.javaOptions = List.copyOf(javaOptions);
    }

    @Override
    public Integer apply(SparkRank rank, Iterator<Object> rows) throws Exception {
        Path report = Files.createTempFile("djl-fsdp-rank" + rank.getEnv().getRank(), ".failure");
        Files.delete(report);
        Process process = RankCommand.start(processBuilder(rank, report));
        try {
            int code = await(process);
            if (code != 0) {
                throw failure(code, FailureReport.read(report));
            }
            return code;
        } finally {
            stop(process);
            Files.deleteIfExists(report);
        }
    }

    /**
     * The rank's JVM as {@code bin/fsdp launch} starts one ({@link RankCommand}), its output on the
     * executor's.
     */
    ProcessBuilder processBuilder(SparkRank rank, Path report) {
        RankCommand command =
                new RankCommand(
                        rank.getCpus(),
                        javaOptions,
                        classPath(),
                        mainCommand.command(rank.getResumeCheckpoint()));
        return command.processBuilder(environment(command, rank), report)
                .redirectOutput(ProcessBuilder.Redirect.INHERIT)
                .redirectError(ProcessBuilder.Redirect.INHERIT);
    }

    /** The variables that place the rank in the job, and the task's GPU as the rank's only one. */
    private static Map<String, String> environment(RankCommand command, SparkRank rank) {
        Map<String, String> variables =
                command.variables(rank.getEnv(), rank.getTimeout().orElse(null));
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

    /**
     * The rank JVM's failure with the message it wrote in its failure report, if it wrote one; one
     * that blames another rank names that rank ({@link CollectiveException#getFailedRank()}), so
     * that the task defers to its report.
     */
    static RuntimeException failure(int code, Optional<FailureReport> report) {
        String message =
                "its JVM exited with code "
                        + code
                        + report.map(written -> ": " + written.message())
                                .orElse(" (it wrote no message: see the executor's log)");
        OptionalInt blamed = report.map(FailureReport::failedRank).orElse(OptionalInt.empty());
        return blamed.isPresent()
                ? new CollectiveException(message, null, blamed.getAsInt())
                : new IllegalStateException(message);
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
