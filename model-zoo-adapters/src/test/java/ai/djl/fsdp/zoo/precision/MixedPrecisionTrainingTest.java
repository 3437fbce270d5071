package ai.djl.fsdp.zoo.precision;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** bfloat16 and float16 mixed precision on one and two ranks (see {@link MixedPrecisionChecks}). */
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
}
