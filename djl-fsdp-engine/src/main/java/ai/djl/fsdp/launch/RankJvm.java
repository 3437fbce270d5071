package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How the {@link Launcher} starts one rank's JVM: its command line (this JVM's {@code java}, the
 * rank's thread counts, the caller's JVM options, the class path, the main class and its
 * arguments), its environment (this JVM's, without Slurm's task variables, plus the rank's place in
 * the job, malloc settings, the launcher to watch and the failure report file), and where its
 * output goes (prefixed lines on the launcher's output, or a log file per rank).
 *
 * @param threadsPerRank the rank's intra-op threads
 * @param javaOptions JVM options, after the launcher's own
 * @param classPath the rank's class path
 * @param mainCommand the main class and its arguments
 * @param logDirectory where each rank's output file goes, or null for the launcher's output
 * @param out receives the ranks' prefixed standard output
 * @param err receives the ranks' prefixed standard error
 */
record RankJvm(
        int threadsPerRank,
        List<String> javaOptions,
        String classPath,
        List<String> mainCommand,
        Path logDirectory,
        PrintStream out,
        PrintStream err) {

    /**
     * Returns the name of a rank's output file in the log directory.
     *
     * @param rank the global rank
     * @return the file name, such as {@code rank1.log}
     */
    static String logFileName(int rank) {
        return "rank" + rank + ".log";
    }

    /**
     * glibc malloc settings for every rank, unless the environment already sets the variable. By
     * default glibc raises its mmap threshold to the largest block freed so far, after which
     * parameter-sized buffers come from the heap arenas and stay resident once freed: the memory
     * FSDP frees after each unit's gather would never leave the process. A fixed 4 MiB threshold
     * keeps small activations in the arenas and hands every larger buffer back to the system when
     * it is freed; huge pages for those mappings cut the cost of mapping them again (measured in
     * docs/benchmarks.md). A glibc without these tunables ignores them.
     */
    static final String MALLOC_TUNABLES_VARIABLE = "GLIBC_TUNABLES";

    static final String MALLOC_TUNABLES =
            "glibc.malloc.mmap_threshold=4194304:glibc.malloc.hugetlb=1";

    /**
     * Slurm describes the task that runs the launcher, not the ranks it starts; a rank that saw
     * them could take them for its own place in the job.
     */
    private static final List<String> SLURM_TASK_VARIABLES =
            List.of("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE");

    /**
     * Starts a rank's JVM.
     *
     * @param rank the global rank
     * @param rankEnvironment the variables that place it in the job
     * @param report where it writes why it failed
     * @return the started rank
     * @throws UncheckedIOException if the JVM could not be started
     */
    LaunchedJob.RankProcess start(int rank, Map<String, String> rankEnvironment, Path report) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-D" + RankThreads.THREADS_PROPERTY + "=" + threadsPerRank);
        command.add("-D" + RankThreads.INTEROP_THREADS_PROPERTY + "=1");
        // After the launcher's own options, so that the caller's win.
        command.addAll(javaOptions);
        command.add("-cp");
        command.add(classPath);
        command.addAll(mainCommand);

        ProcessBuilder builder = new ProcessBuilder(command);
        Map<String, String> env = builder.environment();
        SLURM_TASK_VARIABLES.forEach(env::remove);
        env.putAll(rankEnvironment);
        env.putIfAbsent(MALLOC_TUNABLES_VARIABLE, MALLOC_TUNABLES);
        String[] launcher = LauncherWatch.describeThisProcess();
        env.put(LauncherWatch.PID_VARIABLE, launcher[0]);
        env.put(LauncherWatch.START_VARIABLE, launcher[1]);
        env.put(FailureReport.FILE_VARIABLE, report.toString());
        if (logDirectory != null) {
            builder.redirectErrorStream(true)
                    .redirectOutput(logDirectory.resolve(logFileName(rank)).toFile());
        }
        try {
            Process process = builder.start();
            process.getOutputStream().close();
            if (logDirectory != null) {
                return new LaunchedJob.RankProcess(rank, process, List.of(), report);
            }
            String prefix = "[rank" + rank + "] ";
            return new LaunchedJob.RankProcess(
                    rank,
                    process,
                    List.of(
                            LinePrefixer.start(process.getInputStream(), prefix, out),
                            LinePrefixer.start(process.getErrorStream(), prefix, err)),
                    report);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start rank " + rank + ": " + command, e);
        }
    }
}
