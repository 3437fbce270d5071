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
        try (RankProcesses job =
                RankProcesses.builder(QuantizedCommunicationChecks.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("checks passed"), results.describe());
            }
            System.out.println(results.rank(0).output());
        }
    }

    @Test
    void underHybridShardingOnlyTheAverageBetweenNodesIsQuantized() {
        try (RankProcesses job =
                RankProcesses.builder(QuantizedCommunicationChecks.class)
                        .worldSize(4)
                        .args(QuantizedCommunicationChecks.HYBRID)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("checks passed"), results.describe());
            }
            System.out.println(results.rank(0).output());
        }
    }

    @Test
    void aNanGradientOnOneRankStopsEveryRankAtTheSameStep() {
        try (RankProcesses job =
                RankProcesses.builder(QuantizedCommunicationChecks.class)
                        .worldSize(2)
                        .args(QuantizedCommunicationChecks.NON_FINITE)
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(
                        rank.output().contains("stopped at step 2, norm NaN"), results.describe());
            }
        }
    }
}
