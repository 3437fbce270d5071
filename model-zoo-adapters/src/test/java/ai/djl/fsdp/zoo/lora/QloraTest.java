package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A LoRA step on a 4-bit base under FSDP equals the step on a float base holding the dequantized
 * weights ({@link QloraChecks}), on one rank and on two.
 */
class QloraTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraChecks.run(group);
        }
    }

    @Test
    void twoRanks() {
        try (RankProcesses job =
                RankProcesses.builder(QloraChecks.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
