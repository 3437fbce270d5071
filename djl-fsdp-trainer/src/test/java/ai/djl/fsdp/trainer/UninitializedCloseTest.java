package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A trainer closed before its model was sharded (a start that failed: its caller closes it and
 * rethrows) closes quietly, so that the start's own failure is the one reported: its checkpoint
 * listener has nothing to wait for.
 */
class UninitializedCloseTest {

    @Test
    void closingBeforeShardingThrowsNothing(@TempDir Path dir) {
        Path checkpoints = dir.resolve("checkpoints");
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(Loss.l2Loss())
                        .optDevices(new Device[] {Device.cpu()})
                        .addTrainingListeners(
                                CheckpointListener.builder()
                                        .setOutputDir(checkpoints)
                                        .optSaveSteps(1)
                                        .optAsync(true)
                                        .build());
        try (Model model = Model.newInstance("unsharded", Device.cpu());
                ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            model.setBlock(new SequentialBlock().add(Linear.builder().setUnits(1).build()));
            Trainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model,
                            config,
                            group,
                            FsdpConfig.builder()
                                    .optWrapPolicy(WrapPolicy.byLayerClass("Linear"))
                                    .build());

            assertDoesNotThrow(trainer::close);
        }
        assertFalse(Files.exists(checkpoints.resolve("checkpoint-1")), "nothing was saved");
    }
}
