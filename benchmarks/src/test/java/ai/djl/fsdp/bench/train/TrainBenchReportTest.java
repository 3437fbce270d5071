package ai.djl.fsdp.bench.train;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The peak the training benchmark divides by counts the threads the launcher gives the ranks. */
class TrainBenchReportTest {

    @Test
    void theCpuPeakCountsTheThreadsTheLauncherGivesEachRank() {
        // No OMP_NUM_THREADS: the cores divided among the ranks, at least one each.
        assertEquals(16, TrainBenchReport.units(false, 2, 16, Map.of()));
        assertEquals(3, TrainBenchReport.units(false, 3, 2, Map.of()));
        // OMP_NUM_THREADS is what every rank runs on, as bin/fsdp launch keeps it.
        assertEquals(6, TrainBenchReport.units(false, 2, 16, Map.of("OMP_NUM_THREADS", "3")));
        assertEquals(8, TrainBenchReport.units(false, 2, 2, Map.of("OMP_NUM_THREADS", "4")));
        // A value the launcher ignores is ignored here too.
        assertEquals(16, TrainBenchReport.units(false, 2, 16, Map.of("OMP_NUM_THREADS", "0")));
    }

    @Test
    void theGpuPeakCountsTheRanks() {
        assertEquals(2, TrainBenchReport.units(true, 2, 16, Map.of("OMP_NUM_THREADS", "3")));
    }
}
