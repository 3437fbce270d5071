package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@link CheckpointListener} serves one trainer after another, each saving its end, and epochs
 * are counted once per epoch by the trainer, whatever number of checkpoint listeners it has.
 */
class CheckpointListenerTest {

    /** Two batches of 4 rows an epoch: two optimizer steps. */
    private static final int ROWS = 8;

    private static final int BATCH = 4;

    @Test
    void aListenerServingASecondTrainerSavesItsEndToo(@TempDir Path dir) throws Exception {
        CheckpointListener listener = CheckpointListener.builder().setOutputDir(dir).build();
        Path end = CheckpointDirectory.of(dir, 2);
        fit(1, listener);
        assertTrue(CheckpointDirectory.isComplete(end), "the first trainer's end is saved");
        deleteRecursively(end);

        fit(1, listener);

        assertTrue(CheckpointDirectory.isComplete(end), "the second trainer's end is saved");
    }

    @Test
    void epochsAreCountedOnceWithAnyNumberOfCheckpointListeners(@TempDir Path dir)
            throws Exception {
        assertEquals(2, fit(2).getEpoch(), "no checkpoint listener");
        TrainingState state =
                fit(
                        2,
                        CheckpointListener.builder()
                                .setOutputDir(dir.resolve("a"))
                                .optSaveEpochs(1)
                                .build(),
                        CheckpointListener.builder()
                                .setOutputDir(dir.resolve("b"))
                                .optSaveEpochs(2)
                                .build());
        assertEquals(2, state.getEpoch(), "two checkpoint listeners");
        // Each saved at the epochs it was asked for, by the trainer's count: a after epochs 1 and
        // 2 (steps 2 and 4), b after epoch 2 only.
        assertEquals(1, savedEpoch(dir.resolve("a"), 2));
        assertEquals(2, savedEpoch(dir.resolve("a"), 4));
        assertFalse(Files.exists(CheckpointDirectory.of(dir.resolve("b"), 2)), "b after epoch 1");
        assertEquals(2, savedEpoch(dir.resolve("b"), 4));
    }

    /** Returns the epoch the complete checkpoint of {@code step} under {@code dir} saved. */
    private static long savedEpoch(Path dir, long step) throws IOException {
        Path checkpoint = CheckpointDirectory.of(dir, step);
        assertTrue(CheckpointDirectory.isComplete(checkpoint), checkpoint + " is complete");
        return TrainingState.read(checkpoint.resolve(CheckpointDirectory.TRAINER_STATE)).getEpoch();
    }

    /**
     * Fits a one-layer model on one rank for {@code epochs} with {@code listeners}; returns the
     * training state as the trainer left it before closing.
     */
    private static TrainingState fit(int epochs, TrainingListener... listeners) throws Exception {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                Model model = Model.newInstance("one-linear", Device.cpu());
                NDManager data = NDManager.newBaseManager(Device.cpu())) {
            model.setBlock(new SequentialBlock().add(Linear.builder().setUnits(1).build()));
            ArrayDataset dataset =
                    new ArrayDataset.Builder()
                            .setData(data.randomUniform(0f, 1f, new Shape(ROWS, 3)))
                            .optLabels(data.randomUniform(0f, 1f, new Shape(ROWS, 1)))
                            .setSampling(BATCH, false)
                            .build();
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.l2Loss()).addTrainingListeners(listeners);
            try (FsdpTrainer trainer = TrainerLifecycleTest.newTrainer(model, group, config)) {
                trainer.initialize(new Shape(BATCH, 3));
                EasyTrain.fit(trainer, epochs, dataset, null);
                return trainer.getTrainingState();
            }
        }
    }

    private static void deleteRecursively(Path directory) throws IOException {
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
