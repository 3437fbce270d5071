package ai.djl.fsdp.bench.attention;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.bench.attention.AttentionBenchRank.Measurement;
import ai.djl.fsdp.zoo.finetune.report.PeakMemory;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The attention benchmark's peak is the steps' own, and says so when it cannot be. */
class AttentionBenchRankTest {

    @Test
    void anEarlierLargerPeakDoesNotCountTowardsTheSteps() {
        Assumptions.assumeTrue(
                PeakMemory.resetPeak(), "/proc/self/clear_refs cannot reset the peak here");
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager()) {
            // 256 MB written and freed: the process's peak, far above what a tiny step adds.
            manager.ones(new Shape(64, 1024, 1024)).close();
        }
        long transientPeak = PeakMemory.bytes("VmHWM") - PeakMemory.bytes("VmRSS");
        Assumptions.assumeTrue(
                transientPeak > 200e6,
                "the freed 256 MB did not leave the resident set: " + transientPeak + " bytes");

        Measurement tiny =
                AttentionBenchRank.measure(AttentionKernel.EXPLICIT, new Shape(1, 1, 8, 4), 1);
        assertTrue(tiny.peakReset());
        // Against the freed peak itself: a tiny step's own rise (first calls, heap growth) is far
        // below it on any machine, the freed 256 MB would reach it.
        assertTrue(tiny.peakMb() * 1e6 < transientPeak / 2.0, "the freed 256 MB counted: " + tiny);
        assertTrue(tiny.millis() > 0, tiny.toString());
    }

    @Test
    void theReportLineReadsBackAndAPeakNotResetIsSaid() {
        Measurement reset = new Measurement(5.25, 22.5, true);
        Measurement notReset = new Measurement(4.5, 300.0, false);
        assertEquals(reset, Measurement.parse(reset + "\n"));
        assertEquals(notReset, Measurement.parse(notReset.toString()));

        assertEquals(
                "seq=128 explicit_ms=5.25 sdpa_ms=5.25 time_ratio=1.00 explicit_peak_mb=22.5"
                        + " sdpa_peak_mb=22.5 memory_ratio=1.00",
                AttentionBenchCommand.line(128, reset, reset));
        assertTrue(
                AttentionBenchCommand.line(128, reset, notReset).endsWith(" peak_reset=0"),
                AttentionBenchCommand.line(128, reset, notReset));
    }
}
