package ai.djl.fsdp.zoo.precision;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** float16 loss scaling on one and two ranks (see {@link LossScalingChecks}). */
class LossScalingTest {

    @Test
    void oneRank(@TempDir Path directory) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            LossScalingChecks.runAll(group, directory);
        }
    }

    @Test
    void twoRanks(@TempDir Path directory) {
        try (RankProcesses job =
                RankProcesses.builder(LossScalingChecks.class)
                        .worldSize(2)
                        .args(directory.toString())
                        .timeout(Duration.ofMinutes(6))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            assertTrue(results.rank(0).output().contains("checks passed"));
            assertTrue(results.rank(1).output().contains("checks passed"));
        }
    }
}
