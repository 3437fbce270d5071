package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.ndarray.NDManager;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A LoRA step on a 4-bit base under FSDP equals the step on a float base holding the dequantized
 * weights ({@link QloraChecks}), on one rank and on two; a 4-bit base started sharded from a float
 * checkpoint holds what quantizing the whole model gives ({@link QloraStartChecks}).
 */
class QloraTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraChecks.run(group);
        }
    }

    @Test
    void startsShardedFromAFloatCheckpoint(@TempDir Path directory) throws IOException {
        Path checkpoint = directory.resolve("float");
        try (NDManager manager = TestModels.newManager()) {
            HfCheckpoint.save(
                    TestModels.seeded(QloraStartChecks.NAME, manager, QloraStartChecks.SEED),
                    checkpoint);
        }
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            QloraStartChecks.run(group, checkpoint);
        }
        onTwoRanks(QloraStartChecks.class, checkpoint.toString());
    }

    @Test
    void twoRanks() {
        onTwoRanks(QloraChecks.class);
    }

    private static void onTwoRanks(Class<?> checks, String... args) {
        try (RankProcesses job =
                RankProcesses.builder(checks)
                        .worldSize(2)
                        .args(args)
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
