package ai.djl.fsdp.launch;

import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
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
            "COMMAND is a bin/fsdp command (e.g. bench) or a fully qualified main class.",
            "A job on several nodes runs one launcher per node, each with the same "
                    + DistributedEnv.JOB_TOKEN_VARIABLE
                    + " in its environment."
        })
public final class LaunchCommand implements Subcommand {

    @Spec private CommandSpec spec;

    @Option(
            names = "--nproc-per-node",
            required = true,
            paramLabel = "N",
            description = "Ranks to start on this node (one per GPU).")
    private int nprocPerNode;

    @Option(
            names = "--nnodes",
            defaultValue = "1",
            paramLabel = "M",
            description = "Nodes in the job (default: ${DEFAULT-VALUE}).")
    private int nnodes;

    @Option(
            names = "--node-rank",
            defaultValue = "0",
            paramLabel = "R",
            description = "This node's index in [0, M) (default: ${DEFAULT-VALUE}).")
    private int nodeRank;

    @Option(
            names = "--master-addr",
            paramLabel = "ADDR",
            description = "Address of node 0 (default: 127.0.0.1 on one node).")
    private String masterAddr;

    @Option(
            names = "--master-port",
            paramLabel = "PORT",
            description =
                    "Rendezvous port on node 0 (default: a free port on one node, 29500 on"
                            + " several).")
    private Integer masterPort;

    @Option(
            names = "--threads-per-rank",
            paramLabel = "T",
            description = "Intra-op threads per rank (default: cores / N, at least 1).")
    private Integer threadsPerRank;

    @Option(
            names = "--jvm-opt",
            paramLabel = "OPT",
            description = "A JVM option for every rank, such as --jvm-opt=-Xmx8g (repeatable).")
    private List<String> jvmOptions = new ArrayList<>();

    @Option(
            names = "--stop-timeout",
            defaultValue = "5",
            paramLabel = "SECONDS",
            description =
                    "Seconds stopped ranks get to exit before they are killed (default:"
                            + " ${DEFAULT-VALUE}).")
    private int stopTimeoutSeconds;

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
        Launcher.Builder builder =
                Launcher.builder()
                        .setNprocPerNode(nprocPerNode)
                        .setCommand(command)
                        .optNnodes(nnodes)
                        .optNodeRank(nodeRank)
                        .optJavaOptions(jvmOptions)
                        .optStopTimeout(Duration.ofSeconds(stopTimeoutSeconds));
        if (masterAddr != null) {
            builder.optMasterAddr(masterAddr);
        }
        if (masterPort != null) {
            builder.optMasterPort(masterPort);
        }
        if (threadsPerRank != null) {
            builder.optThreadsPerRank(threadsPerRank);
        }
        if (logDirectory != null) {
            builder.optLogDirectory(logDirectory);
        }
        try {
            builder.build().run();
            return 0;
        } catch (RankFailedException e) {
            spec.commandLine().getErr().println("fsdp launch: " + e.getMessage());
            return e.exitCode();
        }
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
