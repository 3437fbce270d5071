package ai.djl.fsdp.bench.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Runs the checkpoint benchmark end to end on a tiny GPT-2 on 2 ranks. */
class CheckpointBenchCommandTest {

    @Test
    @Timeout(300)
    void printsEveryFigureAndLeavesNoFiles(@TempDir Path directory) throws Exception {
        StringWriter out = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setOut(new PrintWriter(out, true));
        int code =
                fsdp.execute(
                        "bench",
                        "checkpoint",
                        "--nproc=2",
                        "--repeats=1",
                        "--warmup=1",
                        "--layers=2",
                        "--width=32",
                        "--heads=2",
                        "--vocab=500",
                        "--seq=8",
                        "--dir=" + directory,
                        "--jvm-opt=-Xmx256m");
        assertEquals(0, code, out.toString());
        Map<String, Double> figures = new HashMap<>();
        for (String line : out.toString().trim().split("\\R")) {
            String[] pair = line.split("=");
            figures.put(pair[0], Double.parseDouble(pair[1]));
        }
        for (String name :
                new String[] {
                    "sharded_save_sync_blocked_s",
                    "sharded_save_async_blocked_s",
                    "step_during_async_write_s",
                    "sharded_load_s",
                    "full_save_s",
                    "peak_rss_sharded_save_mb",
                    "peak_rss_sharded_load_mb"
                }) {
            assertTrue(figures.get(name) > 0, name + " in " + out);
        }
        // The sharded files hold the parameters and AdamW's two moments, the full file the
        // parameters once; the rest is headers and JSON.
        double parameters = figures.get("param_mb");
        double sharded = figures.get("sharded_bytes_mb");
        double full = figures.get("full_bytes_mb");
        assertTrue(sharded > 3 * parameters && sharded < 3.6 * parameters, out.toString());
        assertTrue(full > parameters && full < 1.2 * parameters, out.toString());
        try (Stream<Path> left = Files.list(directory)) {
            assertEquals(0, left.count(), "the benchmark deletes its checkpoints");
        }
    }
}
