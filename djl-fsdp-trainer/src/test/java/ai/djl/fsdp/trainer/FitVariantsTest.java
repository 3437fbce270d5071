package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code EasyTrain.fit} on 2 ranks (real processes) where DJL's own machinery used to see a
 * different run than FSDP's: data shuffled each epoch by DJL's sampler, and a checkpoint listener
 * at training end when the trainer does not gather the model on close.
 */
class FitVariantsTest {

    private static final int WORLD_SIZE = 2;

    @Test
    void shuffledEpochsAndUngatheredCloseMatchDjlsTrainer(@TempDir Path directory)
            throws Exception {
        try (RankProcesses job =
                RankProcesses.builder(ScenarioRankMain.class)
                        .worldSize(WORLD_SIZE)
                        .args(
                                directory.toString(),
                                ScenarioRankMain.FIT_SHUFFLED,
                                ScenarioRankMain.FIT_NOT_GATHERED,
                                ScenarioRankMain.FIT_CHECKPOINTED)
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        // Every rank shuffles the global batches as DJL's sampler does on one process; per-unit
        // reseeding for dropout must not touch the sampler's generator.
        assertMatches(
                "3 shuffled epochs on 2 ranks",
                FitScenario.Variant.SHUFFLED,
                ScenarioFiles.read(directory.resolve("1-rank0")));
        // Without gather-on-close, DJL's SaveModelTrainingListener still saves the real
        // parameters at training end, not the empty placeholders the shards leave.
        assertMatches(
                "training-end checkpoint without gather on close",
                FitScenario.Variant.NOT_GATHERED,
                ScenarioFiles.read(directory.resolve("2-rank0")));
        // A checkpoint listener saved after every step in the background, kept the newest two.
        int steps = FitScenario.EPOCHS * FitScenario.BATCHES;
        assertEquals(
                List.of(
                        CheckpointDirectory.of(directory.resolve("checkpoints"), steps - 1),
                        CheckpointDirectory.of(directory.resolve("checkpoints"), steps)),
                CheckpointDirectory.list(directory.resolve("checkpoints")));
        assertMatches(
                "fit with a checkpoint listener",
                FitScenario.Variant.PLAIN,
                ScenarioFiles.read(directory.resolve("3-rank0")));
    }

    private static void assertMatches(
            String what, FitScenario.Variant variant, Scenario.Result rank0) throws Exception {
        FitScenario.Result reference =
                FitScenario.fit(
                        null,
                        new FitScenario.Variant(variant.epochs(), variant.shuffle(), true, null));
        assertEquals(
                variant.epochs() * FitScenario.BATCHES,
                (int) rank0.losses()[0],
                what + ": training batches the listener saw");
        Equivalence.assertSameTraining(
                what,
                FitScenario.noiseBound(variant, reference.parameters()),
                new double[0],
                new double[0],
                reference.parameters(),
                rank0.parameters());
    }
}
