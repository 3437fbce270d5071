package ai.djl.fsdp.zoo.precision;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.TestModels;
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
    void settingsAreRefusedOutsideFloat16() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                Model model = Model.newInstance("gpt2-tiny", Device.cpu())) {
            model.setBlock(TestModels.seeded("gpt2-tiny", model.getNDManager(), 1));
            TrainerOptions options =
                    TrainerOptions.builder().optLossScaling(LossScalingChecks.SETTINGS).build();
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    MixedPrecisionChecks.newTrainer(
                                            model,
                                            ShardingStrategy.NO_SHARD,
                                            MixedPrecision.BF16,
                                            group,
                                            options));
            assertTrue(e.getMessage().contains("MixedPrecision.FP16"), e.getMessage());
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
