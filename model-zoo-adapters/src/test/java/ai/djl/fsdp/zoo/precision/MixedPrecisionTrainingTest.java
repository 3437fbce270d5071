package ai.djl.fsdp.zoo.precision;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * bfloat16 and float16 mixed precision on one and two ranks, and the hybrid strategies on four (see
 * {@link MixedPrecisionChecks}).
 */
class MixedPrecisionTrainingTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            MixedPrecisionChecks.runAll(group);
        }
    }

    @Test
    void twoRanks() {
        try (RankProcesses job =
                RankProcesses.builder(MixedPrecisionChecks.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }

    /** HYBRID_SHARD with LoRA and HYBRID_SHARD_ZERO2 in bfloat16 on 2 "nodes" of 2 ranks. */
    @Test
    void hybridOnFourRanks() {
        try (RankProcesses job =
                RankProcesses.builder(MixedPrecisionChecks.class)
                        .worldSize(4)
                        .args("hybrid")
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("checks passed"), results.describe());
            }
        }
    }
}
