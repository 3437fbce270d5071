package ai.djl.fsdp.zoo.precision;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Training with quantized weights and gradients on two real ranks against the same training with
 * none (see {@link QuantizedCommunicationChecks}: the bounds and what they rest on), and a NaN
 * gradient on one of them that stops both at the same step instead of leaving one waiting; and
 * hybrid sharding on four, 2 nodes of 2, quantizing only the average between the nodes.
 */
class QuantizedCommunicationTest {

    @Test
    void quantizedRunsTrainWithinTheirBoundsOnFewerBytes() {
        assertEveryRankPrints(2, Duration.ofMinutes(6), "checks passed");
    }

    @Test
    void underHybridShardingOnlyTheAverageBetweenNodesIsQuantized() {
        assertEveryRankPrints(
                4, Duration.ofMinutes(6), "checks passed", QuantizedCommunicationChecks.HYBRID);
    }

    @Test
    void aNanGradientOnOneRankStopsEveryRankAtTheSameStep() {
        assertEveryRankPrints(
                2,
                Duration.ofMinutes(3),
                "stopped at step 2, norm NaN",
                QuantizedCommunicationChecks.NON_FINITE);
    }

    /**
     * Runs the checks on {@code worldSize} real ranks and asserts each printed {@code expected}.
     */
    private static void assertEveryRankPrints(
            int worldSize, Duration timeout, String expected, String... args) {
        try (RankProcesses job =
                RankProcesses.builder(QuantizedCommunicationChecks.class)
                        .worldSize(worldSize)
                        .args(args)
                        .timeout(timeout)
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains(expected), results.describe());
            }
            System.out.println(results.rank(0).output());
        }
    }
}
