package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Batched generation with the key-value cache under FSDP, on one rank and on two, gives each
 * prompt's greedy continuation alone without a cache (see {@link ShardedGenerationChecks}).
 */
class ShardedGenerationTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            ShardedGenerationChecks.runAll(group);
        }
    }

    @Test
    void twoRanks() {
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerationChecks.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
