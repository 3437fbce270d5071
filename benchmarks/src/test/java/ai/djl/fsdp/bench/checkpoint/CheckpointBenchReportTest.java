package ai.djl.fsdp.bench.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checkpoint benchmark's summary over the ranks. */
class CheckpointBenchReportTest {

    @Test
    void timesAndMemoryAreTheLargestRanksAndThePeakResetHoldsOnlyOnEveryRank(@TempDir Path tmp)
            throws IOException {
        Path report = tmp.resolve("report");
        Files.write(
                Path.of(report + ".rank0"),
                List.of("step_s 1.5", "peak_rss_step_mb 300", "peak_rss_reset 1.0"));
        Files.write(
                Path.of(report + ".rank1"),
                List.of("step_s 2.5", "peak_rss_step_mb 200", "peak_rss_reset 0.0"));
        assertEquals(
                String.join(
                        System.lineSeparator(),
                        "step_s=2.500",
                        "peak_rss_step_mb=300.000",
                        "peak_rss_reset=0.000"),
                CheckpointBenchReport.summarize(2, report));
    }
}
