package ai.djl.fsdp.spark;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The {@code spark-submit} entry: runs a {@code bin/fsdp} command (such as {@code finetune}) or a
 * main class on {@code --ranks} barrier tasks, a JVM per rank, as {@code bin/fsdp launch} runs it
 * on one machine:
 *
 * <pre>
 * spark-submit --class ai.djl.fsdp.spark.FsdpSparkSubmit djl-fsdp-spark.jar --ranks 4 -- finetune ARGS
 * </pre>
 *
 * <p>Exit codes: 0 success, 1 the job failed (one line on stderr naming the rank), 2 a command line
 * that does not parse or gives a value out of range (a message naming the flag, then the usage).
 */
@Command(
        name = "djl-fsdp-spark",
        mixinStandardHelpOptions = true,
        description =
                "Run FSDP ranks as a Spark barrier stage: a bin/fsdp command (finetune ...) or a"
                        + " main class, then its arguments, in a JVM per rank.")
public final class FsdpSparkSubmit implements Callable<Integer> {

    private final SparkSession session;

    @Spec private CommandSpec spec;

    private int ranks;

    @Option(
            names = "--jvm-opt",
            description = "A JVM option for every rank, such as -Xmx8g (repeatable).")
    private List<String> javaOptions = new ArrayList<>();

    private Duration timeout;

    @Parameters(
            paramLabel = "COMMAND",
            arity = "1..*",
            description = "After --: a bin/fsdp command or a main class, then its arguments.")
    private List<String> command;

    private FsdpSparkSubmit(SparkSession session) {
        this.session = session;
    }

    @Option(
            names = "--ranks",
            required = true,
            description =
                    "The number of ranks, one barrier task each (spark.task.cpus cores each).")
    private void setRanks(int ranks) {
        if (ranks < 1) {
            throw new ParameterException(
                    spec.commandLine(), "--ranks " + ranks + ": give at least 1 rank");
        }
        this.ranks = ranks;
    }

    @Option(
            names = "--timeout",
            paramLabel = "SECONDS",
            description =
                    "Seconds a rank may show no sign of life before every rank fails (default 60).")
    private void setTimeout(double seconds) {
        long millis = Math.round(seconds * 1000);
        if (!Double.isFinite(seconds) || millis < 1) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--timeout "
                            + seconds
                            + ": give the seconds a rank may show no sign of life, at least"
                            + " 0.001");
        }
        timeout = Duration.ofMillis(millis);
    }

    /**
     * Runs the command line on the application's Spark session and exits with its code.
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        SparkSession session = SparkSession.builder().getOrCreate();
        int code;
        try {
            code = run(session, args);
        } finally {
            session.stop();
        }
        System.exit(code);
    }

    /**
     * Runs the command line on {@code session}'s cluster.
     *
     * @param session the Spark session
     * @param args the command line
     * @return the exit code
     */
    public static int run(SparkSession session, String... args) {
        return commandLine(session).execute(args);
    }

    /** The command line on {@code session}: a failed job exits 1, a bad command line 2. */
    static CommandLine commandLine(SparkSession session) {
        CommandLine commandLine = new CommandLine(new FsdpSparkSubmit(session));
        commandLine.setExecutionExceptionHandler(
                (failure, line, parseResult) -> {
                    PrintWriter err = line.getErr();
                    err.println("djl-fsdp-spark: " + summary(failure));
                    err.flush();
                    return 1;
                });
        return commandLine;
    }

    /**
     * Returns a failure's message without the stack traces Spark puts in a failed stage's reason:
     * its lines up to the first stack frame, joined.
     */
    static String summary(Throwable failure) {
        StringBuilder summary = new StringBuilder();
        for (String line : String.valueOf(failure.getMessage()).split("\\R")) {
            if (line.strip().startsWith("at ")) {
                break;
            }
            if (!line.isBlank()) {
                summary.append(summary.length() == 0 ? "" : " ").append(line.strip());
            }
        }
        return summary.toString();
    }

    @Override
    public Integer call() {
        FsdpDistributor.Builder builder =
                FsdpDistributor.builder(session).setRanks(ranks).optJavaOptions(javaOptions);
        if (timeout != null) {
            builder.optTimeout(timeout);
        }
        builder.build().runMain(command);
        return 0;
    }
}
