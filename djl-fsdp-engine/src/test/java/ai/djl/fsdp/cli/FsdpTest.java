package ai.djl.fsdp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class FsdpTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int execute(String... args) {
        CommandLine commandLine = Fsdp.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        return commandLine.execute(args);
    }

    @Test
    void subcommandsComeFromTheServiceLoader() {
        assertTrue(Fsdp.commandLine().getSubcommands().containsKey("launch"));
    }

    @Test
    void helpListsTheCommands() {
        assertEquals(0, execute("--help"));
        assertTrue(out.toString().contains("launch"), out.toString());
    }

    @Test
    void versionIsPrinted() {
        assertEquals(0, execute("--version"));
        assertTrue(out.toString().startsWith("djl-fsdp "), out.toString());
    }

    @Test
    void aMissingOrUnknownCommandIsAUsageError() {
        assertEquals(2, execute());
        assertTrue(err.toString().contains("Missing command"), err.toString());
        assertEquals(2, execute("no-such-command"));
        assertTrue(err.toString().contains("no-such-command"), err.toString());
    }

    @Test
    void aFailingCommandPrintsOneLineNotAStackTrace() {
        assertEquals(
                Fsdp.EXIT_FAILURE,
                execute("launch", "--nproc-per-node", "1", "--", "com.example.Missing"));
        String message = err.toString().strip();
        assertTrue(message.startsWith("fsdp launch: No class com.example.Missing"), message);
        assertEquals(1, message.lines().count(), message);
    }

    @Test
    void launchRejectsAnUnknownCommandBeforeStartingRanks() {
        assertEquals(2, execute("launch", "--nproc-per-node", "2", "--", "no-such-command"));
        assertTrue(err.toString().contains("Unknown command 'no-such-command'"), err.toString());
    }

    @Test
    @Timeout(180)
    void aBadCommandLinePrintsTheUsageOncePerJob() {
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args("launch", "--no-such-flag")
                        .jvmOptions("-Xmx64m")
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            RankProcesses.Results results = job.await();
            for (RankProcesses.RankResult rank : results.all()) {
                assertEquals(2, rank.exitCode(), results.describe());
            }
            String first = results.rank(0).output();
            assertTrue(first.contains("Missing required"), first);
            assertEquals(1, first.split("Usage:", -1).length - 1, "one usage: " + first);
            String second = results.rank(1).output();
            assertFalse(second.contains("Usage:"), "rank 1 prints no usage: " + second);
            assertFalse(second.contains("Missing"), "nor the error: " + second);
        }
    }

    @Test
    void stackTraceOnRequest() {
        execute("--stacktrace", "launch", "--nproc-per-node", "1", "--", "com.example.Missing");
        assertTrue(err.toString().contains("\tat "), err.toString());
    }

    @Test
    @Timeout(120)
    void launchExitsWithTheFailedRanksCode(@TempDir Path pidDirectory) {
        int code =
                execute(
                        "launch",
                        "--nproc-per-node",
                        "2",
                        "--stop-timeout",
                        "2",
                        "--jvm-opt=-Xmx32m",
                        "--",
                        "ai.djl.fsdp.launch.RankProbe",
                        "fail",
                        "1",
                        "3",
                        pidDirectory.toString());
        assertEquals(3, code);
        assertTrue(err.toString().contains("rank 1 exited with code 3"), err.toString());
    }
}
