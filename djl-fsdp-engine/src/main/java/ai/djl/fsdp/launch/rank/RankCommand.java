package ai.djl.fsdp.launch.rank;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * How a launcher starts one rank's JVM, whichever launcher it is ({@code bin/fsdp launch}, or a
 * Spark barrier task): its command line (this JVM's {@code java}, the rank's thread counts, the
 * throughput collector unless the caller chose a collector, the caller's JVM options, the class
 * path, the main class and its arguments), its environment (this JVM's, without Slurm's task
 * variables, plus the rank's place in the job, malloc settings, the launcher to watch and the
 * failure report file) and its standard input (closed: a rank reads none). Where its output goes is
 * the launcher's choice.
 *
 * @param threads the rank's intra-op threads
 * @param javaOptions JVM options, after the launcher's own
 * @param classPath the rank's class path
 * @param mainCommand the main class and its arguments
 */
public record RankCommand(
        int threads, List<String> javaOptions, String classPath, List<String> mainCommand) {

    /**
     * The variable of glibc malloc settings every rank gets, unless its environment already sets
     * it. By default glibc raises its mmap threshold to the largest block freed so far, after which
     * parameter-sized buffers come from the heap arenas and stay resident once freed: the memory
     * FSDP frees after each unit's gather would never leave the process. A fixed 4 MiB threshold
     * keeps small activations in the arenas and hands every larger buffer back to the system when
     * it is freed; huge pages for those mappings cut the cost of mapping them again. A fixed mmap
     * threshold also freezes glibc's trim threshold at 128 KiB (it would follow the mmap threshold,
     * at twice it), so the arenas' free top would go back to the system after nearly every step's
     * frees and fault in again, page by page, on the next: 8 MiB, twice the mmap threshold as glibc
     * itself would set it, keeps it (measured in docs/benchmarks.md). A glibc without these
     * tunables ignores them.
     */
    public static final String MALLOC_TUNABLES_VARIABLE = "GLIBC_TUNABLES";

    /** The malloc settings in {@value #MALLOC_TUNABLES_VARIABLE}. */
    public static final String MALLOC_TUNABLES =
            "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=8388608"
                    + ":glibc.malloc.hugetlb=1";

    /**
     * The garbage collector every rank runs with unless its JVM options choose one: the throughput
     * collector. A step makes and drops thousands of small Java objects (an array's handle, its
     * shape, its entry in its manager's map) and keeps few, and G1, Java's default, charges every
     * reference stored into the heap a write barrier that the throughput collector does not: a
     * host-bound step ran about 4% faster with it (the median of eight alternating runs), with no
     * change where compute bounds the step (docs/benchmarks.md). Its collections of the young
     * generation stop the rank, for about 2 ms every 1.2 s at that step.
     */
    public static final String COLLECTOR_OPTION = "-XX:+UseParallelGC";

    /** The variables the JVM reads options from, besides its command line. */
    private static final List<String> JVM_OPTION_VARIABLES =
            List.of("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS");

    /**
     * An option that names a collector, or reads options from a file (which may name one): an
     * argument file, {@code -XX:Flags=} or {@code -XX:VMOptionsFile=}.
     */
    private static final Pattern MAY_CHOOSE_COLLECTOR =
            Pattern.compile("-XX:[+-]Use\\w+GC|@.+|-XX:(Flags|VMOptionsFile)=.*");

    /**
     * Slurm describes the task that runs the launcher, not the ranks it starts; a rank that saw
     * them could take them for its own place in the job.
     */
    private static final List<String> SLURM_TASK_VARIABLES =
            List.of("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE");

    /**
     * Creates the command of a rank's JVM.
     *
     * @param threads the rank's intra-op threads
     * @param javaOptions JVM options, after the launcher's own
     * @param classPath the rank's class path
     * @param mainCommand the main class and its arguments
     */
    public RankCommand {
        javaOptions = List.copyOf(javaOptions);
        mainCommand = List.copyOf(mainCommand);
    }

    /**
     * Returns the variables that place a rank in the job, as {@code torchrun} sets them, with the
     * job token, the run id, the timeout when given and {@code OMP_NUM_THREADS}.
     *
     * @param env the rank's place in the job
     * @param timeout the process group timeout, or null for the rank's own default
     * @return the variables by name
     */
    public Map<String, String> variables(DistributedEnv env, Duration timeout) {
        Map<String, String> variables = new LinkedHashMap<>();
        variables.put("RANK", Integer.toString(env.getRank()));
        variables.put("WORLD_SIZE", Integer.toString(env.getWorldSize()));
        variables.put("LOCAL_RANK", Integer.toString(env.getLocalRank()));
        variables.put("LOCAL_WORLD_SIZE", Integer.toString(env.getLocalWorldSize()));
        variables.put("MASTER_ADDR", env.getMasterAddr());
        variables.put("MASTER_PORT", Integer.toString(env.getMasterPort()));
        variables.put(DistributedEnv.JOB_TOKEN_VARIABLE, env.getJobToken());
        variables.put(DistributedEnv.RUN_ID_VARIABLE, env.getRunId());
        if (timeout != null) {
            variables.put(
                    ProcessGroupOptions.TIMEOUT_VARIABLE,
                    Double.toString(timeout.toMillis() / 1000.0));
        }
        variables.put("OMP_NUM_THREADS", Integer.toString(threads));
        return variables;
    }

    /**
     * Returns the rank JVM's command line.
     *
     * @return {@code java}, its options, the class path, the main class and its arguments
     */
    public List<String> commandLine() {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-D" + RankThreads.THREADS_PROPERTY + "=" + threads);
        command.add("-D" + RankThreads.INTEROP_THREADS_PROPERTY + "=1");
        // The JVM refuses two collectors: a caller who chose one gets theirs alone.
        if (!choosesCollector(javaOptions, System.getenv())) {
            command.add(COLLECTOR_OPTION);
        }
        // After the launcher's own options, so that the caller's win.
        command.addAll(javaOptions);
        command.add("-cp");
        command.add(classPath);
        command.addAll(mainCommand);
        return command;
    }

    /**
     * Returns whether JVM options may choose (or switch off) a garbage collector: {@code
     * javaOptions} or the options in {@code environment}'s {@code JAVA_TOOL_OPTIONS}, {@code
     * JDK_JAVA_OPTIONS} and {@code _JAVA_OPTIONS}, which a rank's JVM reads too. An option that
     * reads more options from a file counts as a choice: the file is not read here.
     *
     * @param javaOptions the rank's JVM options
     * @param environment the variables the rank's JVM inherits
     * @return whether they name a collector, or may
     */
    static boolean choosesCollector(List<String> javaOptions, Map<String, String> environment) {
        List<String> options = new ArrayList<>(javaOptions);
        for (String variable : JVM_OPTION_VARIABLES) {
            String value = environment.get(variable);
            if (value != null) {
                options.addAll(List.of(value.trim().split("\\s+")));
            }
        }
        return options.stream().anyMatch(option -> MAY_CHOOSE_COLLECTOR.matcher(option).matches());
    }

    /**
     * Returns a builder for the rank's JVM, its output still to be directed by the caller.
     *
     * @param rankEnvironment the variables that place it in the job (see {@link #variables}) and
     *     any the launcher adds
     * @param report where the rank writes why it failed ({@link FailureReport})
     * @return the process builder
     */
    public ProcessBuilder processBuilder(Map<String, String> rankEnvironment, Path report) {
        ProcessBuilder builder = new ProcessBuilder(commandLine());
        Map<String, String> env = builder.environment();
        SLURM_TASK_VARIABLES.forEach(env::remove);
        env.putAll(rankEnvironment);
        env.putIfAbsent(MALLOC_TUNABLES_VARIABLE, MALLOC_TUNABLES);
        env.putAll(RankAllocator.choose(env).variables(env));
        String[] launcher = LauncherWatch.describeThisProcess();
        env.put(LauncherWatch.PID_VARIABLE, launcher[0]);
        env.put(LauncherWatch.START_VARIABLE, launcher[1]);
        env.put(FailureReport.FILE_VARIABLE, report.toString());
        return builder;
    }

    /**
     * Starts a rank's JVM from its {@link #processBuilder} and closes its standard input.
     *
     * @param builder the rank's process builder
     * @return the started JVM
     * @throws IOException if it could not be started
     */
    public static Process start(ProcessBuilder builder) throws IOException {
        Process process = builder.start();
        process.getOutputStream().close();
        return process;
    }
}
