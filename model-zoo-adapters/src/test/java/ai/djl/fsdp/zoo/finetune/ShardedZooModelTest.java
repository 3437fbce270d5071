package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * GPT-2 and Llama under FSDP on one and two ranks, in every strategy: logits independent of the
 * sharding, LoRA at init equal to the base model, merged equal to adapted after training (see
 * {@link ShardedZooChecks}).
 */
class ShardedZooModelTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            ShardedZooChecks.runAll(group);
        }
    }

    @Test
    void twoRanks() {
        try (RankProcesses job =
                RankProcesses.builder(ShardedZooChecks.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
