package ai.djl.fsdp.zoo.precision;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.optim.LossScaler;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.NonFiniteGradientException;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

/**
 * Dynamic loss scaling in float16 training of GPT-2, end to end: an overflow injected on the last
 * rank only (its loss times {@link #OVERFLOW}, so its float16 gradients are infinite) skips the
 * step on every rank, leaves the parameters as they were and halves the scale, with no {@link
 * NonFiniteGradientException} (the options stop at the first non-finite step of other precisions);
 * good steps double it after the growth interval; a run resumed from a checkpoint goes on with the
 * saved scale and good-step count and reaches the uninterrupted run's parameters exactly; a scale
 * backed off below its floor stops training on every rank.
 */
final class LossScalingChecks {

    /** Starts at 1024, halves at an overflow, doubles after 2 good steps. */
    static final LossScaler.Settings SETTINGS =
            LossScaler.Settings.DEFAULTS.withInitialScale(1024f).withGrowthInterval(2);

    /** What the injected rank's loss is multiplied by: its float16 gradients overflow. */
    static final float OVERFLOW = 1e8f;

    /** Which steps overflow, and the scale after each. */
    private static final boolean[] OVERFLOWS = {true, true, false, false, false, false};

    private static final float[] SCALES = {512f, 256f, 256f, 512f, 512f, 1024f};

    /** The checkpoint is saved after this step: scale 512, one good step since it grew. */
    private static final int SAVED_AFTER = 5;

    private static final int SEED = 5;

    private LossScalingChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args the directory every rank shares, for the checkpoint
     * @throws IOException if the checkpoint cannot be written or read
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            runAll(group, Path.of(args[0]));
        }
        System.out.println("checks passed");
    }

    static void runAll(ProcessGroup group, Path directory) throws IOException {
        Path checkpoint = directory.resolve("checkpoint-" + SAVED_AFTER);
        Map<String, float[]> uninterrupted = skipGrowAndSave(group, checkpoint);
        resume(group, checkpoint, uninterrupted);
        collapse(group);
    }

    private static Map<String, float[]> skipGrowAndSave(ProcessGroup group, Path checkpoint)
            throws IOException {
        try (Model model = Model.newInstance("gpt2-tiny", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = newModel(model);
            try (FsdpTrainer trainer = newTrainer(model, group, SETTINGS)) {
                for (int i = 0; i < OVERFLOWS.length; i++) {
                    Map<String, float[]> before = parameters(trainer, lm);
                    step(trainer, manager, group, OVERFLOWS[i]);
                    Map<String, float[]> after = parameters(trainer, lm);
                    String where = "rank " + group.getRank() + " step " + (i + 1);
                    if (OVERFLOWS[i] != same(before, after)) {
                        throw new AssertionError(
                                where
                                        + (OVERFLOWS[i]
                                                ? ": an overflow changed the parameters"
                                                : ": a good step left the parameters unchanged"));
                    }
                    if (OVERFLOWS[i] == Double.isFinite(trainer.getLastGradNorm().orElse(0))) {
                        throw new AssertionError(where + ": norm " + trainer.getLastGradNorm());
                    }
                    checkScale(where, trainer, SCALES[i]);
                    if (i + 1 == SAVED_AFTER) {
                        trainer.saveCheckpoint(checkpoint);
                        TrainingState saved =
                                TrainingState.read(
                                        checkpoint.resolve(CheckpointDirectory.TRAINER_STATE));
                        if (saved.getLossScale() != 512f || saved.getLossScaleGoodSteps() != 1) {
                            throw new AssertionError(
                                    "saved scale "
                                            + saved.getLossScale()
                                            + " after "
                                            + saved.getLossScaleGoodSteps()
                                            + " good steps, expected 512 after 1");
                        }
                    }
                }
                return parameters(trainer, lm);
            }
        }
    }

    private static void resume(
            ProcessGroup group, Path checkpoint, Map<String, float[]> uninterrupted)
            throws IOException {
        try (Model model = Model.newInstance("gpt2-tiny", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = newModel(model);
            try (FsdpTrainer trainer = newTrainer(model, group, SETTINGS)) {
                trainer.loadCheckpoint(checkpoint);
                checkScale("resumed", trainer, SCALES[SAVED_AFTER - 1]);
                for (int i = SAVED_AFTER; i < OVERFLOWS.length; i++) {
                    step(trainer, manager, group, OVERFLOWS[i]);
                    checkScale("resumed step " + (i + 1), trainer, SCALES[i]);
                }
                if (!same(uninterrupted, parameters(trainer, lm))) {
                    throw new AssertionError(
                            "rank " + group.getRank() + ": the resumed run's parameters differ");
                }
            }
        }
    }

    /** Two overflows from a scale of 4 with a floor of 2: the second stops training. */
    private static void collapse(ProcessGroup group) {
        try (Model model = Model.newInstance("gpt2-tiny", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            newModel(model);
            try (FsdpTrainer trainer =
                    newTrainer(model, group, SETTINGS.withInitialScale(4f).withMinScale(2f))) {
                step(trainer, manager, group, true);
                checkScale("first overflow", trainer, 2f);
                try {
                    step(trainer, manager, group, true);
                    throw new AssertionError("a scale below its floor did not stop training");
                } catch (NonFiniteGradientException e) {
                    if (!e.getMessage().contains("below its floor 2.0")
                            || e.getConsecutiveSteps() != 2) {
                        throw new AssertionError("unexpected message: " + e.getMessage(), e);
                    }
                }
            }
        }
    }

    private static CausalLM newModel(Model model) {
        CausalLM lm = TestModels.seeded("gpt2-tiny", model.getNDManager(), SEED);
        model.setBlock(lm);
        return lm;
    }

    private static FsdpTrainer newTrainer(
            Model model, ProcessGroup group, LossScaler.Settings settings) {
        return MixedPrecisionChecks.newTrainer(
                model,
                ShardingStrategy.FULL_SHARD,
                MixedPrecision.FP16,
                group,
                TrainerOptions.builder().optLossScaling(settings).build());
    }

    /** One optimizer step on fixed tokens; with {@code overflow} the last rank's loss explodes. */
    private static void step(
            FsdpTrainer trainer, NDManager manager, ProcessGroup group, boolean overflow) {
        try (NDManager scope = manager.newSubManager()) {
            NDArray tokens = TestModels.tokens(scope, 2, 13, SEED + group.getRank());
            NDList inputs = new NDList(tokens.get(":, 0:12"));
            NDList labels = new NDList(tokens.get(":, 1:13"));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList outputs = trainer.forward(inputs, labels);
                NDArray loss = trainer.getLoss().evaluate(labels, outputs);
                boolean inject = overflow && group.getRank() == group.getSize() - 1;
                collector.backward(inject ? loss.mul(OVERFLOW) : loss);
            }
            trainer.step();
        }
    }

    private static void checkScale(String where, FsdpTrainer trainer, float expected) {
        double scale = trainer.getLossScale().orElseThrow();
        if (scale != expected) {
            throw new AssertionError(where + ": loss scale " + scale + ", expected " + expected);
        }
    }

    /** The trainable parameters' values, gathered (a collective). */
    private static Map<String, float[]> parameters(FsdpTrainer trainer, CausalLM lm) {
        Map<String, float[]>[] values = new Map[1];
        trainer.withFullParameters(() -> values[0] = MixedPrecisionChecks.trainable(lm));
        return values[0];
    }

    private static boolean same(Map<String, float[]> a, Map<String, float[]> b) {
        return a.keySet().equals(b.keySet())
                && a.keySet().stream().allMatch(key -> Arrays.equals(a.get(key), b.get(key)));
    }
}
