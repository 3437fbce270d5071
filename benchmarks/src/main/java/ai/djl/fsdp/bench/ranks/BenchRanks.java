package ai.djl.fsdp.bench.ranks;

import ai.djl.fsdp.launch.GpuSharing;
import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.launch.RankFailedException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * What every {@code bin/fsdp bench} command shares (a picocli mixin): the ranks it starts on this
 * machine, their JVM options, and the run itself: launch the ranks, which write their measurements
 * next to a report file, then print the command's summary of them.
 */
public final class BenchRanks {

    @Spec(Spec.Target.MIXEE)
    private CommandSpec spec;

    @Option(
            names = "--nproc",
            defaultValue = "2",
            description = "Ranks (default: ${DEFAULT-VALUE}).")
    private int nproc;

    @Option(
            names = "--jvm-opt",
            paramLabel = "OPT",
            description =
                    "A JVM option for every rank (repeatable; default: a heap that fits the"
                            + " benchmark).")
    private List<String> jvmOptions = new ArrayList<>();

    /** Reads the ranks' measurements and returns what the command prints. */
    @FunctionalInterface
    public interface Summary {

        /**
         * Summarizes the measurements.
         *
         * @param report the report file the ranks were given; rank {@code r} may also write {@code
         *     report + ".rank" + r}
         * @return the text to print
         * @throws IOException if a report cannot be read
         */
        String read(Path report) throws IOException;
    }

    /**
     * Returns how many ranks to start.
     *
     * @return {@code --nproc}
     */
    public int nproc() {
        return nproc;
    }

    /**
     * Returns the command line of a rank's main class: each option of the given picocli mixins that
     * has a value, re-emitted as {@code --name=value}, so that the rank parses them with the same
     * mixins and every option is declared once.
     *
     * @param main the rank's main class
     * @param mixins the mixins whose values the rank needs
     * @return the main class's name and its arguments
     * @throws IllegalArgumentException if an option takes several values
     */
    public static List<String> rankCommand(Class<?> main, Object... mixins) {
        List<String> command = new ArrayList<>();
        command.add(main.getName());
        for (Object mixin : mixins) {
            for (OptionSpec option : CommandSpec.forAnnotatedObject(mixin).options()) {
                if (option.isMultiValue()) {
                    throw new IllegalArgumentException(
                            option.longestName() + " takes several values: re-emit it by hand");
                }
                Object value = option.getValue();
                if (value != null) {
                    command.add(option.longestName() + "=" + value);
                }
            }
        }
        return command;
    }

    /**
     * Starts the ranks, each running {@code command.apply(report)}, and prints {@code summary} of
     * what they wrote; the report files are deleted afterwards.
     *
     * @param command each rank's command line, given the report file
     * @param defaultJvmOptions the ranks' JVM options when no {@code --jvm-opt} is given
     * @param summary what to print from the report
     * @return 0, or the exit code of a rank that failed (its error is printed on stderr)
     * @throws IOException if the report cannot be made or read
     * @throws InterruptedException if interrupted while the ranks run
     */
    public int run(
            Function<Path, List<String>> command, List<String> defaultJvmOptions, Summary summary)
            throws IOException, InterruptedException {
        Path report = Files.createTempFile("fsdp-bench-" + spec.name(), "");
        try {
            Launcher.Builder launcher =
                    Launcher.builder()
                            .setNprocPerNode(nproc)
                            .setCommand(command.apply(report))
                            .optJavaOptions(jvmOptions.isEmpty() ? defaultJvmOptions : jvmOptions);
            // DJL_FSDP_RANKS_PER_GPU: several ranks on one GPU, as bin/fsdp launch puts them.
            GpuSharing sharing = GpuSharing.forNode(null, System.getenv(), 0, false);
            PrintWriter out = spec.commandLine().getOut();
            if (sharing != null) {
                out.println("fsdp bench " + spec.name() + ": " + sharing.notice());
                out.flush();
                launcher.optGpuSharing(sharing);
            }
            launcher.build().run();
            out.println(summary.read(report));
            out.flush();
            return 0;
        } catch (RankFailedException e) {
            spec.commandLine()
                    .getErr()
                    .println("fsdp bench " + spec.name() + ": " + e.getMessage());
            return e.getExitCode();
        } finally {
            for (int rank = 0; rank < nproc; rank++) {
                Files.deleteIfExists(Path.of(report + ".rank" + rank));
            }
            Files.deleteIfExists(report);
        }
    }
}
