package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code bin/fsdp launch --allocator}: checked before any rank starts, and said. */
class LaunchAllocatorOptionTest {

    @TempDir Path directory;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int launch(String... arguments) {
        CommandLine commandLine = new CommandLine(new LaunchCommand());
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        return commandLine.execute(arguments);
    }

    @Test
    void aMissingLibraryIsRefusedByTheOptionsName() {
        Path missing = directory.resolve("libnothing.so");

        int code =
                launch("--nproc-per-node", "1", "--allocator", missing.toString(), "--", "bench");

        assertNotEquals(0, code);
        assertTrue(err.toString().contains("--allocator " + missing), err.toString());
        assertTrue(err.toString().contains("no such library"), err.toString());
    }

    @Test
    void aChosenLibraryIsNamedBeforeTheRanksStart() throws IOException {
        Path library = Files.writeString(directory.resolve("libmyalloc.so"), "");

        int code =
                launch(
                        "--nproc-per-node",
                        "1",
                        "--dry-run",
                        "--allocator",
                        library.toString(),
                        "--",
                        "bench");

        assertEquals(0, code, err.toString());
        assertTrue(
                out.toString()
                        .contains(
                                "fsdp launch: ranks allocate with libmyalloc.so (preloaded from "
                                        + directory
                                        + ")"),
                out.toString());
    }
}
