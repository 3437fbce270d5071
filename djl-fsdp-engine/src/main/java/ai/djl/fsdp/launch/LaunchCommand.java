package ai.djl.fsdp.launch;

import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.launch.rank.RankAllocator;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code bin/fsdp launch}: starts this node's ranks through the {@link Launcher}. */
@Command(
        name = "launch",
        mixinStandardHelpOptions = true,
        description = {
            "Starts this node's ranks as separate JVMs with RANK, WORLD_SIZE, LOCAL_RANK,"
                    + " LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and "
                    + DistributedEnv.JOB_TOKEN_VARIABLE
                    + " set, and waits for them.",
            "COMMAND is a bin/fsdp command (e.g. bench), a fully qualified main class on the"
                    + " class path (--classpath or CLASSPATH, before the launcher's own), or a"
                    + " jar whose manifest names its Main-Class.",
            "A job on several nodes runs one launcher per node, each with the same "
                    + DistributedEnv.JOB_TOKEN_VARIABLE
                    + " in its environment."
        })
public final class LaunchCommand implements Subcommand {

    @Spec private CommandSpec spec;

    @Option(
            names = "--nproc-per-node",
            paramLabel = "N",
            description =
                    "Ranks to start on this node (one per GPU; default: the config file's"
                            + " num_processes / num_machines).")
    private Integer nprocPerNode;

    @Option(
            names = {"--config_file", "--config-file"},
            paramLabel = "FILE",
            description =
                    "Accelerate's config file: num_processes (over all machines),"
                            + " num_machines, machine_rank, main_process_ip and main_process_port"
                            + " set the job (the flags win); mixed_precision and fsdp_config reach"
                            + " the ranks as accelerate launch passes them: ACCELERATE_USE_FSDP,"
                            + " ACCELERATE_MIXED_PRECISION, FSDP_SHARDING_STRATEGY, ... .")
    private Path configFile;

    @Mixin private AccelerateFlags accelerate;

    @Option(
            names = "--nnodes",
            paramLabel = "M",
            description =
                    "Nodes in the job (default: 1; in a Slurm step of one task per node,"
                            + " SLURM_NNODES).")
    private Integer nnodes;

    @Option(
            names = "--node-rank",
            paramLabel = "R",
            description =
                    "This node's index in [0, M) (default: 0; in a Slurm step, SLURM_NODEID).")
    private Integer nodeRank;

    @Option(
            names = "--master-addr",
            paramLabel = "ADDR",
            description =
                    "Address of node 0 (default: MASTER_ADDR from the environment, else 127.0.0.1"
                            + " on one node).")
    private String masterAddr;

    @Option(
            names = "--master-port",
            paramLabel = "PORT",
            description =
                    "Rendezvous port on node 0 (default: MASTER_PORT from the environment; under"
                            + " Slurm 15000 + SLURM_JOB_ID %% 10000; else a free port on one node,"
                            + " 29500 on several).")
    private Integer masterPort;

    @Option(
            names = "--timeout",
            paramLabel = "SECONDS",
            description =
                    "Seconds a rank may show no sign of life (stopped, its store host gone)"
                            + " before every rank fails (default: DJL_FSDP_TIMEOUT, else 60).")
    private Double timeoutSeconds;

    @Option(
            names = "--run-id",
            paramLabel = "ID",
            description =
                    "Id of this run, the same on every node (default: DJL_FSDP_RUN_ID; a fresh"
                            + " random id on one node, slurm-JOBID under Slurm).")
    private String runId;

    @Option(
            names = "--threads-per-rank",
            paramLabel = "T",
            description =
                    "Intra-op threads per rank (default: OMP_NUM_THREADS from the environment,"
                            + " else cores / N, at least 1; ranks x threads beyond the cores are"
                            + " named in one line).")
    private Integer threadsPerRank;

    @Option(
            names = "--jvm-opt",
            paramLabel = "OPT",
            description = "A JVM option for every rank, such as --jvm-opt=-Xmx8g (repeatable).")
    private List<String> jvmOptions = new ArrayList<>();

    @Option(
            names = {"--classpath", "-cp"},
            paramLabel = "PATHS",
            description =
                    "The program's class path, before the launcher's own (default: CLASSPATH);"
                            + " entries separated by '${sys:path.separator}', dir/* for a folder's"
                            + " jars.")
    private String userClassPath;

    @Option(
            names = "--stop-timeout",
            defaultValue = "5",
            paramLabel = "SECONDS",
            description =
                    "Seconds stopped ranks get to exit before they are killed (default:"
                            + " ${DEFAULT-VALUE}).")
    private int stopTimeoutSeconds;

    @Option(
            names = "--ranks-per-gpu",
            paramLabel = "K",
            description =
                    "A test layout: local rank r computes on gpu(r / K), each rank told what its"
                            + " NCCL needs to share a GPU (NCCL_MULTI_RANK_GPU_ENABLE=1 from NCCL"
                            + " 2.30, else a NCCL_HOSTID per rank over sockets on lo); collectives"
                            + " then run at a socket's bandwidth (default: "
                            + RankDevice.RANKS_PER_GPU_VARIABLE
                            + ", else 1).")
    private Integer ranksPerGpu;

    @Option(
            names = "--allocator",
            paramLabel = "NAME",
            description =
                    "The ranks' memory allocator: glibc, tcmalloc (faster steps, a higher peak),"
                            + " jemalloc (a lower peak, slower steps), or the path of an"
                            + " allocator library to preload (default: "
                            + RankAllocator.VARIABLE
                            + ", else glibc).")
    private String allocator;

    @Option(
            names = "--dry-run",
            description =
                    "Print each local rank's GPU and the variables --ranks-per-gpu sets, and start"
                            + " nothing (no NCCL needed).")
    private boolean dryRun;

    @Option(
            names = "--log-dir",
            paramLabel = "DIR",
            description =
                    "Write each rank's output to DIR/rankN.log instead of this terminal (the"
                            + " directory must exist).")
    private Path logDirectory;

    @Parameters(
            arity = "1..*",
            paramLabel = "COMMAND",
            description = "What each rank runs, with its arguments (after --).")
    private List<String> command;

    @Override
    public Integer call() throws InterruptedException {
        requireKnownCommand();
        Map<String, String> env = System.getenv();
        SlurmStep slurm = SlurmStep.of(env);
        if (slurm != null) {
            slurm.requireOneTaskPerNode(spec.commandLine());
        }
        Map<String, Object> accelerateFlags = accelerate.asConfigKeys();
        AccelerateLaunchConfig file =
                configFile == null && accelerateFlags.isEmpty()
                        ? null
                        : readConfigFile(accelerateFlags);
        int nodes =
                first(
                        nnodes,
                        file != null ? file.getNumMachines() : null,
                        slurm != null ? slurm.nodes() : 1);
        int ranks = nprocPerNode(file, nodes);
        int node =
                first(
                        nodeRank,
                        file != null ? file.getMachineRank() : null,
                        slurm != null ? slurm.nodeId() : 0);
        Launcher.Builder builder =
                Launcher.builder()
                        .setNprocPerNode(ranks)
                        .setCommand(command)
                        .optNnodes(nodes)
                        .optNodeRank(node)
                        .optJavaOptions(jvmOptions)
                        .optClassPath(classPath(env))
                        .optStopTimeout(Duration.ofSeconds(stopTimeoutSeconds));
        if (file != null) {
            file.getEnvironment().forEach(builder::optEnvironment);
            for (String note : file.getNotes()) {
                spec.commandLine().getOut().println("fsdp launch: note: " + note);
            }
            spec.commandLine().getOut().flush();
        }
        String addr =
                first(
                        masterAddr,
                        file != null ? file.getMainProcessIp() : null,
                        blankToNull(env.get("MASTER_ADDR")));
        if (addr != null) {
            builder.optMasterAddr(addr);
        }
        Integer port =
                first(
                        masterPort,
                        file != null ? file.getMainProcessPort() : null,
                        SlurmStep.defaultPort(env));
        if (port != null) {
            builder.optMasterPort(port);
        }
        if (timeoutSeconds != null) {
            if (!(timeoutSeconds > 0)) {
                throw new ParameterException(
                        spec.commandLine(), "--timeout must be a positive number of seconds");
            }
            builder.optTimeout(Duration.ofMillis((long) Math.ceil(timeoutSeconds * 1000)));
        }
        if (runId != null) {
            builder.optRunId(runId);
        }
        RankThreads threads =
                RankThreads.forNode(
                        threadsPerRank, ranks, Runtime.getRuntime().availableProcessors(), env);
        builder.optThreadsPerRank(threads.perRank());
        if (threads.note() != null) {
            spec.commandLine().getOut().println("fsdp launch: " + threads.note());
            spec.commandLine().getOut().flush();
        }
        if (logDirectory != null) {
            builder.optLogDirectory(logDirectory);
        }
        chooseAllocator(env, file != null ? file.getEnvironment() : Map.of(), builder);
        GpuSharing sharing = gpuSharing(env, node);
        if (sharing != null) {
            builder.optGpuSharing(sharing);
        }
        if (dryRun) {
            for (int localRank = 0; localRank < ranks; localRank++) {
                spec.commandLine()
                        .getOut()
                        .println(
                                "local rank "
                                        + localRank
                                        + ": gpu("
                                        + (sharing == null ? localRank : sharing.gpuOf(localRank))
                                        + ")"
                                        + (sharing == null
                                                ? ""
                                                : " " + sharing.environment(localRank)));
            }
            spec.commandLine().getOut().flush();
            return 0;
        }
        // On SIGTERM or Ctrl-C the JVM halts once its shutdown hooks are done, which may be before
        // this thread has reported the stop: one hook waits until it has.
        CountDownLatch reported = new CountDownLatch(1);
        Thread awaitReport =
                new Thread(
                        () -> {
                            try {
                                reported.await(stopTimeoutSeconds + 5L, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        },
                        "fsdp-launch-report");
        Runtime.getRuntime().addShutdownHook(awaitReport);
        try {
            builder.build().run();
            return 0;
        } catch (RankFailedException e) {
            spec.commandLine().getErr().println("fsdp launch: " + e.getMessage());
            spec.commandLine().getErr().flush();
            return e.getExitCode();
        } finally {
            reported.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(awaitReport);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs and ends at once
            }
        }
    }

    /**
     * The layout of several ranks per GPU that --ranks-per-gpu (or its variable) asks for, its
     * notice printed; null for one rank per GPU.
     */
    private GpuSharing gpuSharing(Map<String, String> env, int node) {
        GpuSharing sharing;
        try {
            sharing = GpuSharing.forNode(ranksPerGpu, env, node, dryRun);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
        if (sharing != null) {
            spec.commandLine().getOut().println("fsdp launch: " + sharing.notice());
            spec.commandLine().getOut().flush();
        }
        return sharing;
    }

    /** The user's class path (the option, else CLASSPATH), then this JVM's. */
    private String classPath(Map<String, String> env) {
        String own = System.getProperty("java.class.path");
        String user = userClassPath != null ? userClassPath : blankToNull(env.get("CLASSPATH"));
        return user == null ? own : user + File.pathSeparator + own;
    }

    /**
     * Checks the ranks' allocator before any rank starts (a misnamed one is an error here, not in
     * every rank) and says which it is.
     */
    private void chooseAllocator(
            Map<String, String> env, Map<String, String> fromConfigFile, Launcher.Builder builder) {
        Map<String, String> inherited = new HashMap<>(env);
        inherited.putAll(fromConfigFile);
        if (allocator != null) {
            inherited.put(RankAllocator.VARIABLE, allocator);
            builder.optEnvironment(RankAllocator.VARIABLE, allocator);
        }
        RankAllocator chosen;
        try {
            chosen = RankAllocator.choose(inherited);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (chosen.note() != null) {
            spec.commandLine().getOut().println("fsdp launch: " + chosen.note());
            spec.commandLine().getOut().flush();
        }
    }

    private AccelerateLaunchConfig readConfigFile(Map<String, Object> flags) {
        try {
            return AccelerateLaunchConfig.of(configFile, flags);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    private int nprocPerNode(AccelerateLaunchConfig file, int nodes) {
        if (nprocPerNode != null) {
            return nprocPerNode;
        }
        if (file == null) {
            throw new ParameterException(
                    spec.commandLine(),
                    "Missing --nproc-per-node: give the ranks per node, --num_processes, or a"
                            + " --config_file with num_processes");
        }
        try {
            return file.processesPerMachine(nodes);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    @SafeVarargs
    private static <T> T first(T... values) {
        for (T value : values) {
            if (value != null) {
                return value;
            }
        }
        return null;
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.trim();
    }

    /**
     * A command name (no dot) that {@code bin/fsdp} does not have would fail on every rank; say so
     * once, before starting any.
     */
    private void requireKnownCommand() {
        String first = command.get(0);
        CommandLine fsdp = spec.commandLine().getParent();
        if (!first.contains(".") && fsdp != null && !fsdp.getSubcommands().containsKey(first)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "Unknown command '"
                            + first
                            + "': give a bin/fsdp command ("
                            + String.join(", ", fsdp.getSubcommands().keySet())
                            + ") or a fully qualified main class");
        }
    }
}
