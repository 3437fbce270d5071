package ai.djl.fsdp.launch;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.launch.rank.RankCommand;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Starts the ranks of one node as separate JVMs, like {@code torchrun}: the same {@code java} and
 * class path as this JVM, one process per rank, each told its place in the job through the
 * environment variables that {@code torchrun} sets ({@code RANK}, {@code WORLD_SIZE}, {@code
 * LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code MASTER_ADDR}, {@code MASTER_PORT}) plus the job
 * token {@value DistributedEnv#JOB_TOKEN_VARIABLE}, which the rendezvous uses to refuse strangers.
 *
 * <p>Each rank also gets {@value DistributedEnv#RUN_ID_VARIABLE}, an id of this launch, so that the
 * store refuses the ranks of another job given the same port and token; {@value
 * LauncherWatch#PID_VARIABLE}, so that it exits when this launcher dies; {@value
 * ai.djl.fsdp.launch.rank.FailureReport#FILE_VARIABLE}, where it writes why it failed; and, when
 * set, the timeout in {@value ProcessGroupOptions#TIMEOUT_VARIABLE}.
 *
 * <p>Each rank's output lines reach this JVM's output prefixed with {@code [rankN] } (or go to a
 * file per rank, see {@link Builder#optLogDirectory}). When a rank exits with a non-zero code the
 * launcher stops the others (SIGTERM, then SIGKILL after {@link Builder#optStopTimeout the stop
 * timeout}) and {@link #run} throws a {@link RankFailedException} naming the rank that failed first
 * with its own message (a rank whose report blames another rank of this node defers to it); when
 * this JVM is shut down (Ctrl-C) it stops them all. {@link #start} starts the ranks without
 * waiting, for callers that watch them one by one (tests).
 *
 * <pre>{@code
 * Launcher.builder().setNprocPerNode(2).setCommand("bench", "collectives").build().run();
 * }</pre>
 */
public final class Launcher {

    private final int nprocPerNode;
    private final int nnodes;
    private final int nodeRank;
    private final JobRendezvous rendezvous;
    private final Duration timeout;
    private final Map<String, String> environment;
    private final List<Integer> localRanks;
    private final Duration stopTimeout;
    private final GpuSharing gpuSharing;
    private final RankJvm jvm;

    private Launcher(Builder builder, JobRendezvous rendezvous, RankJvm jvm) {
        nprocPerNode = builder.nprocPerNode;
        nnodes = builder.nnodes;
        nodeRank = builder.nodeRank;
        this.rendezvous = rendezvous;
        timeout = builder.timeout;
        environment = Map.copyOf(builder.environment);
        localRanks = builder.localRanks;
        stopTimeout = builder.stopTimeout;
        gpuSharing = builder.gpuSharing;
        this.jvm = jvm;
    }

    /**
     * Creates a builder for a launcher.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns the number of ranks in the job: {@code nnodes * nprocPerNode}. */
    public int getWorldSize() {
        return nnodes * nprocPerNode;
    }

    /** Returns the intra-op threads each rank gets. */
    public int getThreadsPerRank() {
        return jvm.command().threads();
    }

    /**
     * Starts this node's ranks and waits until all of them have exited.
     *
     * @throws RankFailedException if a rank exited with a non-zero code (the others are stopped),
     *     or this JVM was shut down and stopped the ranks
     * @throws InterruptedException if interrupted while waiting (the ranks are stopped)
     * @throws UncheckedIOException if a rank's JVM could not be started
     */
    public void run() throws InterruptedException {
        try (LaunchedJob job = start()) {
            job.awaitSuccess();
        }
    }

    /**
     * Starts this node's ranks and returns at once; the caller waits for them, watches them or
     * stops them through the returned job, and closes it.
     *
     * @return the started ranks
     * @throws UncheckedIOException if a rank's JVM could not be started (those already started are
     *     stopped)
     */
    public LaunchedJob start() {
        Path reports;
        try {
            reports = Files.createTempDirectory("djl-fsdp-launch-");
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create a folder for failure reports", e);
        }
        LaunchedJob job = new LaunchedJob(stopTimeout, reports);
        try {
            for (int localRank : localRanks) {
                int rank = nodeRank * nprocPerNode + localRank;
                job.add(
                        jvm.start(
                                rank,
                                rankEnvironment(localRank),
                                reports.resolve("rank" + rank + ".failure")));
            }
        } catch (RuntimeException e) {
            job.close();
            throw e;
        }
        return job;
    }

    /**
     * Returns the variables the launcher sets for a rank of this node (the rank's JVM also inherits
     * this JVM's environment): what a caller that runs a rank in its own JVM (see {@link
     * Builder#optLocalRanks}) hands to {@code DistributedEnv.fromVariables}.
     *
     * @param localRank the rank on this node
     * @return the variables by name
     */
    public Map<String, String> rankEnvironment(int localRank) {
        if (localRank < 0 || localRank >= nprocPerNode) {
            throw new IllegalArgumentException(
                    "local rank must be in [0, " + nprocPerNode + "), got " + localRank);
        }
        DistributedEnv place =
                DistributedEnv.of(
                                nodeRank * nprocPerNode + localRank,
                                getWorldSize(),
                                localRank,
                                nprocPerNode,
                                rendezvous.masterAddr(),
                                rendezvous.masterPort(),
                                rendezvous.jobToken())
                        .withRunId(rendezvous.runId());
        Map<String, String> env = new LinkedHashMap<>(environment);
        env.put("GROUP_RANK", Integer.toString(nodeRank));
        env.putAll(jvm.command().variables(place, timeout));
        if (gpuSharing != null) {
            env.putAll(gpuSharing.environment(localRank));
        }
        return env;
    }

    /** Returns rank {@code rank}'s output file's name in the log directory: {@code rank1.log}. */
    public static String logFileName(int rank) {
        return RankJvm.logFileName(rank);
    }

    /**
     * Configures a {@link Launcher}; {@link #setNprocPerNode} and {@link #setCommand} are required.
     */
    public static final class Builder {

        private int nprocPerNode;
        private int nnodes = 1;
        private int nodeRank;
        private String masterAddr;
        private Integer masterPort;
        private String jobToken;
        private String runId;
        private Duration timeout;
        private Integer threadsPerRank;
        private List<String> javaOptions = Collections.emptyList();
        private List<String> command;
        private final Map<String, String> environment = new LinkedHashMap<>();
        private List<Integer> localRanks;
        private Duration stopTimeout = Duration.ofSeconds(5);
        private String classPath = System.getProperty("java.class.path");
        private Path logDirectory;
        private GpuSharing gpuSharing;
        private PrintStream out = System.out;
        private PrintStream err = System.err;

        Builder() {}

        /**
         * Sets the number of ranks to start on this node (one per device).
         *
         * @param nprocPerNode the local world size, at least 1
         * @return this builder
         */
        public Builder setNprocPerNode(int nprocPerNode) {
            this.nprocPerNode = nprocPerNode;
            return this;
        }

        /**
         * Sets what each rank runs: a fully qualified main class followed by its arguments, or a
         * {@code bin/fsdp} subcommand name (no dot) followed by its arguments.
         *
         * @param command the main class or subcommand, then its arguments
         * @return this builder
         */
        public Builder setCommand(List<String> command) {
            this.command = List.copyOf(command);
            return this;
        }

        /**
         * Sets what each rank runs; see {@link #setCommand(List)}.
         *
         * @param command the main class or subcommand, then its arguments
         * @return this builder
         */
        public Builder setCommand(String... command) {
            return setCommand(List.of(command));
        }

        /**
         * Sets the number of nodes in the job (default 1); every node runs its own launcher.
         *
         * @param nnodes the node count
         * @return this builder
         */
        public Builder optNnodes(int nnodes) {
            this.nnodes = nnodes;
            return this;
        }

        /**
         * Sets this node's index among the nodes (default 0); its ranks are {@code nodeRank *
         * nprocPerNode} onwards.
         *
         * @param nodeRank the node index
         * @return this builder
         */
        public Builder optNodeRank(int nodeRank) {
            this.nodeRank = nodeRank;
            return this;
        }

        /**
         * Sets the address of the node that runs rank 0 (default the loopback address on one node;
         * required for several nodes).
         *
         * @param masterAddr a host name or IP address
         * @return this builder
         */
        public Builder optMasterAddr(String masterAddr) {
            this.masterAddr = masterAddr;
            return this;
        }

        /**
         * Sets the rendezvous port on the master node (default: a free port, picked when the
         * launcher is built, on one node; 29500 on several).
         *
         * @param masterPort the TCP port
         * @return this builder
         */
        public Builder optMasterPort(int masterPort) {
            this.masterPort = masterPort;
            return this;
        }

        /**
         * Sets the job's shared secret (default: {@value DistributedEnv#JOB_TOKEN_VARIABLE} from
         * this process's environment, else a fresh random one on a single node; several nodes must
         * share one).
         *
         * @param jobToken the secret every rank of the job presents at the rendezvous
         * @return this builder
         */
        public Builder optJobToken(String jobToken) {
            this.jobToken = jobToken;
            return this;
        }

        /**
         * Sets the id of this run (default: {@value DistributedEnv#RUN_ID_VARIABLE} from this
         * process's environment; else a fresh random one on a single node, {@code slurm-JOBID}
         * under Slurm, and none for several nodes, which must share one: give them the same).
         *
         * @param runId at most 64 bytes
         * @return this builder
         */
        public Builder optRunId(String runId) {
            this.runId = runId;
            return this;
        }

        /**
         * Sets the ranks' timeout (see {@link ProcessGroupOptions#getTimeout()}), passed to them in
         * {@value ProcessGroupOptions#TIMEOUT_VARIABLE}; by default they read their own.
         *
         * @param timeout a positive duration
         * @return this builder
         */
        public Builder optTimeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /**
         * Sets each rank's intra-op thread count (default: {@code OMP_NUM_THREADS} from the
         * environment, else this machine's cores divided among the node's ranks, at least 1; see
         * {@link RankThreads}), so that ranks sharing a machine do not oversubscribe it.
         *
         * @param threadsPerRank the thread count
         * @return this builder
         */
        public Builder optThreadsPerRank(int threadsPerRank) {
            this.threadsPerRank = threadsPerRank;
            return this;
        }

        /**
         * Sets JVM options for every rank, such as {@code -Xmx8g}.
         *
         * @param javaOptions the options, placed before the main class
         * @return this builder
         */
        public Builder optJavaOptions(List<String> javaOptions) {
            this.javaOptions = List.copyOf(javaOptions);
            return this;
        }

        /**
         * Adds an environment variable for every rank, on top of this process's environment.
         *
         * @param name the variable
         * @param value its value
         * @return this builder
         */
        public Builder optEnvironment(String name, String value) {
            environment.put(name, value);
            return this;
        }

        /**
         * Sets which of this node's ranks to start (default: all); the caller runs the others
         * itself, in its own JVM, with {@link Launcher#rankEnvironment}. A benchmark that times
         * rank 0 in-process starts ranks 1 to N-1 this way.
         *
         * @param localRanks local ranks in {@code [0, nprocPerNode)}
         * @return this builder
         */
        public Builder optLocalRanks(List<Integer> localRanks) {
            this.localRanks = List.copyOf(localRanks);
            return this;
        }

        /**
         * Sets how long stopped ranks get to exit before they are killed (default 5 seconds).
         *
         * @param stopTimeout the grace period after SIGTERM
         * @return this builder
         */
        public Builder optStopTimeout(Duration stopTimeout) {
            this.stopTimeout = stopTimeout;
            return this;
        }

        /**
         * Sets the ranks' class path (default: this JVM's, {@code java.class.path}).
         *
         * @param classPath the class path, entries separated as {@code java -cp} expects
         * @return this builder
         */
        public Builder optClassPath(String classPath) {
            this.classPath = classPath;
            return this;
        }

        /**
         * Sends each rank's standard output and error into its own file in {@code logDirectory}
         * (named by {@link Launcher#logFileName}) instead of the launcher's output, like {@code
         * torchrun --log-dir}.
         *
         * @param logDirectory an existing directory
         * @return this builder
         */
        public Builder optLogDirectory(Path logDirectory) {
            this.logDirectory = logDirectory;
            return this;
        }

        /**
         * Puts several local ranks on each GPU, a test layout: each rank gets the layout's {@link
         * GpuSharing#environment variables} (default: one rank per GPU).
         *
         * @param gpuSharing the layout
         * @return this builder
         */
        public Builder optGpuSharing(GpuSharing gpuSharing) {
            this.gpuSharing = gpuSharing;
            return this;
        }

        /**
         * Sets where the ranks' prefixed output goes (default {@code System.out} and {@code
         * System.err}).
         *
         * @param out receives the ranks' standard output
         * @param err receives the ranks' standard error
         * @return this builder
         */
        public Builder optOutput(PrintStream out, PrintStream err) {
            this.out = out;
            this.err = err;
            return this;
        }

        /**
         * Checks the settings and builds the launcher.
         *
         * @return the launcher
         * @throws IllegalArgumentException if a setting is missing or out of range
         */
        public Launcher build() {
            Require.that(
                    nprocPerNode >= 1, "nproc-per-node must be at least 1, got " + nprocPerNode);
            Require.that(nnodes >= 1, "nnodes must be at least 1, got " + nnodes);
            Require.that(
                    nodeRank >= 0 && nodeRank < nnodes,
                    "node-rank must be in [0, " + nnodes + "), got " + nodeRank);
            Require.that(
                    masterPort == null || (masterPort > 0 && masterPort < 65536),
                    "master-port must be in [1, 65535], got " + masterPort);
            Require.that(
                    threadsPerRank == null || threadsPerRank >= 1,
                    "threads per rank must be at least 1, got " + threadsPerRank);
            Require.that(command != null && !command.isEmpty(), "no command to run on the ranks");
            Require.that(
                    classPath != null && !classPath.isEmpty(),
                    "no class path for the ranks: set java.class.path or optClassPath");
            Require.that(
                    logDirectory == null || Files.isDirectory(logDirectory),
                    "the log directory " + logDirectory + " does not exist: create it first");
            if (threadsPerRank == null) {
                threadsPerRank =
                        RankThreads.forNode(
                                        null,
                                        nprocPerNode,
                                        Runtime.getRuntime().availableProcessors(),
                                        System.getenv())
                                .perRank();
            }
            if (localRanks == null) {
                localRanks = IntStream.range(0, nprocPerNode).boxed().collect(Collectors.toList());
            }
            for (int localRank : localRanks) {
                Require.that(
                        localRank >= 0 && localRank < nprocPerNode,
                        "local ranks must be in [0, " + nprocPerNode + "), got " + localRank);
            }
            Require.that(
                    timeout == null || !timeout.isNegative() && !timeout.isZero(),
                    "the timeout must be positive, got " + timeout);
            JobRendezvous rendezvous =
                    JobRendezvous.resolve(nnodes, masterAddr, masterPort, jobToken, runId);
            UserProgram program = UserProgram.of(command, classPath);
            RankJvm jvm =
                    new RankJvm(
                            new RankCommand(
                                    threadsPerRank,
                                    javaOptions,
                                    program.classPath(),
                                    program.mainCommand()),
                            logDirectory,
                            out,
                            err);
            return new Launcher(this, rendezvous, jvm);
        }
    }
}
