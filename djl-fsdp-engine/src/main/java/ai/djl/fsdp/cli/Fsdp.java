package ai.djl.fsdp.cli;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.io.PrintWriter;
import java.util.ServiceLoader;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code bin/fsdp} command line. Its subcommands are whatever {@link Subcommand}s the modules
 * on the class path list in {@code META-INF/services/ai.djl.fsdp.cli.Subcommand}.
 *
 * <p>Exit codes: 0 on success, 1 when a subcommand fails, 2 for a command line that does not parse,
 * or a subcommand's own code.
 */
@Command(
        name = "fsdp",
        mixinStandardHelpOptions = true,
        versionProvider = Fsdp.Version.class,
        description = "Fully Sharded Data Parallel training for the Deep Java Library.",
        synopsisSubcommandLabel = "COMMAND",
        commandListHeading = "%nCommands:%n")
public final class Fsdp implements Runnable {

    /** The exit code of a subcommand that threw. */
    public static final int EXIT_FAILURE = 1;

    @Spec private CommandSpec spec;

    @Option(
            names = "--stacktrace",
            description = "Print the full stack trace when a command fails.",
            scope = CommandLine.ScopeType.INHERIT)
    private boolean stackTrace;

    /**
     * Runs the command line and exits the JVM with its exit code.
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        // A rank srun started itself takes its share of the node's cores, not all of them.
        RankThreads.applyToSlurmTask(System.getenv(), Runtime.getRuntime().availableProcessors());
        System.exit(commandLine().execute(args));
    }

    /**
     * Returns the command line with every {@link Subcommand} found on the class path, ready to
     * {@link CommandLine#execute execute}.
     *
     * @return the {@code fsdp} command line
     */
    public static CommandLine commandLine() {
        Fsdp fsdp = new Fsdp();
        CommandLine commandLine = new CommandLine(fsdp);
        for (Subcommand subcommand : ServiceLoader.load(Subcommand.class)) {
            commandLine.addSubcommand(subcommand);
        }
        commandLine.setExecutionExceptionHandler(fsdp::reportFailure);
        commandLine.setParameterExceptionHandler(Fsdp::reportBadCommandLine);
        return commandLine;
    }

    /** Without a subcommand there is nothing to do: a usage error that lists the commands. */
    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command.");
    }

    /**
     * A failed subcommand is reported as one line naming the command and the cause chain (each
     * message once), not as a stack trace: most failures are bad input or a peer that died, and the
     * message says which. {@code --stacktrace} restores the trace for bugs.
     */
    private int reportFailure(Exception failure, CommandLine command, ParseResult parseResult) {
        PrintWriter err = command.getErr();
        StringBuilder message = new StringBuilder(command.getCommandSpec().qualifiedName());
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            String text = cause.getMessage() != null ? cause.getMessage() : cause.toString();
            // A wrapper that quotes its cause ("--flag: <cause>") already says it: once is enough.
            if (!message.toString().contains(text)) {
                message.append(": ").append(text);
            }
        }
        err.println(command.getColorScheme().errorText(message.toString()));
        FailureReport.writeIfRequested(message.toString(), failure);
        if (stackTrace) {
            failure.printStackTrace(err);
        }
        err.flush();
        return EXIT_FAILURE;
    }

    /**
     * A command line that does not parse is the same on every rank of a job: rank 0 (or a process
     * outside a job) prints the error and the usage, the other ranks print nothing, and each tells
     * the launcher the one-line error, which the launcher reports once.
     */
    private static int reportBadCommandLine(ParameterException failure, String[] args) {
        CommandLine command = failure.getCommandLine();
        PrintWriter err = command.getErr();
        FailureReport.writeIfRequested(
                command.getCommandSpec().qualifiedName() + ": " + failure.getMessage(), failure);
        if (rank() == 0) {
            err.println(command.getColorScheme().errorText(failure.getMessage()));
            if (!UnmatchedArgumentException.printSuggestions(failure, err)) {
                command.usage(err, command.getColorScheme());
            }
            err.flush();
        }
        return command.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** Returns this process's rank in its job; 0 outside a job or where the job is ill-defined. */
    private static int rank() {
        try {
            return DistributedEnv.fromVariables(System.getenv()).getRank();
        } catch (RuntimeException notAJob) {
            return 0;
        }
    }

    /** Reads the version from the engine jar's manifest. */
    static final class Version implements IVersionProvider {

        @Override
        public String[] getVersion() {
            String version = Fsdp.class.getPackage().getImplementationVersion();
            return new String[] {"djl-fsdp " + (version != null ? version : "(development build)")};
        }
    }
}
