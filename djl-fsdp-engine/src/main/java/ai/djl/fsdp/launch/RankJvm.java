package ai.djl.fsdp.launch;

import ai.djl.fsdp.launch.rank.RankCommand;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * How the {@link Launcher} starts one rank's JVM: as its {@link RankCommand} says, with its output
 * prefixed on the launcher's output, or in a log file per rank.
 *
 * @param command the rank JVM's command line and environment
 * @param logDirectory where each rank's output file goes, or null for the launcher's output
 * @param out receives the ranks' prefixed standard output
 * @param err receives the ranks' prefixed standard error
 */
record RankJvm(RankCommand command, Path logDirectory, PrintStream out, PrintStream err) {

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
     * Starts a rank's JVM.
     *
     * @param rank the global rank
     * @param rankEnvironment the variables that place it in the job
     * @param report where it writes why it failed
     * @return the started rank
     * @throws UncheckedIOException if the JVM could not be started
     */
    LaunchedJob.RankProcess start(int rank, Map<String, String> rankEnvironment, Path report) {
        ProcessBuilder builder = command.processBuilder(rankEnvironment, report);
        if (logDirectory != null) {
            builder.redirectErrorStream(true)
                    .redirectOutput(logDirectory.resolve(logFileName(rank)).toFile());
        }
        try {
            Process process = RankCommand.start(builder);
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
            throw new UncheckedIOException(
                    "Could not start rank " + rank + ": " + builder.command(), e);
        }
    }
}
