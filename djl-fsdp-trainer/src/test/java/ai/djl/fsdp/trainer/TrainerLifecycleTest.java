package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What an FSDP trainer does when it is used out of order or its end fails: a second backward for
 * one forward is refused with the fix, and a close whose final save fails still frees everything.
 */
class TrainerLifecycleTest {

    private static final Shape INPUT = new Shape(2, 3);

    @Test
    void aSecondBackwardForOneForwardSaysToSumTheLosses() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                Model model = twoLinears();
                FsdpTrainer trainer = newTrainer(model, group, new DefaultTrainingConfig(LOSS))) {
            trainer.initialize(INPUT);
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray input = trainer.getManager().ones(INPUT);
                NDArray loss = trainer.forward(new NDList(input)).singletonOrThrow().sum();
                collector.backward(loss);
                IllegalStateException error =
                        assertThrows(IllegalStateException.class, () -> collector.backward(loss));
                assertEquals(
                        "backward already ran for this forward: FSDP runs one backward per"
                                + " forward (its graphs and gathered parameters are freed by"
                                + " then). Sum the losses first and call backward once on the"
                                + " sum.",
                        error.getMessage());
            }
        }
    }

    @Test
    void aFailingFinalSaveStillClosesEverythingAndEndsTheOtherListeners() {
        List<String> ended = new ArrayList<>();
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(LOSS)
                        .addTrainingListeners(
                                new EndListener("first", ended, true),
                                new EndListener("second", ended, false));
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                Model model = twoLinears()) {
            FsdpTrainer trainer = newTrainer(model, group, config);
            trainer.initialize(INPUT);
            IllegalStateException error = assertThrows(IllegalStateException.class, trainer::close);

            assertEquals("first's save failed", error.getMessage());
            assertEquals(List.of("first", "second"), ended);
            assertFalse(trainer.isSharded(), "the shards are closed");
            assertFalse(trainer.getManager().isOpen(), "DJL's trainer is closed");
            // The model is gathered back, its block tree restored.
            SequentialBlock block = (SequentialBlock) model.getBlock();
            assertEquals(
                    new Shape(4, 3),
                    block.getChildren()
                            .get(0)
                            .getValue()
                            .getParameters()
                            .get("weight")
                            .getArray()
                            .getShape());
        }
    }

    private static final Loss LOSS = Loss.l2Loss();

    /** Ends training by noting its name, and fails if asked (as a final save that fails). */
    private static final class EndListener implements ShardedModelListener {
        private final String name;
        private final List<String> ended;
        private final boolean fails;

        EndListener(String name, List<String> ended, boolean fails) {
            this.name = name;
            this.ended = ended;
            this.fails = fails;
        }

        @Override
        public void endTraining(FsdpTrainer trainer) {
            ended.add(name);
            if (fails) {
                throw new IllegalStateException(name + "'s save failed");
            }
        }

        @Override
        public void onEpoch(Trainer trainer) {}

        @Override
        public void onTrainingBatch(Trainer trainer, BatchData batchData) {}

        @Override
        public void onValidationBatch(Trainer trainer, BatchData batchData) {}

        @Override
        public void onTrainingBegin(Trainer trainer) {}

        @Override
        public void onTrainingEnd(Trainer trainer) {}
    }

    private static Model twoLinears() {
        Model model = Model.newInstance("two-linears", Device.cpu());
        model.setBlock(
                new SequentialBlock()
                        .add(Linear.builder().setUnits(4).build())
                        .add(Linear.builder().setUnits(1).build()));
        return model;
    }

    /** Returns a trainer of {@code model} on the CPU, its {@code Linear}s the units. */
    static FsdpTrainer newTrainer(Model model, ProcessGroup group, DefaultTrainingConfig config) {
        return FullyShardedDataParallel.newTrainer(
                model,
                config.optDevices(new Device[] {Device.cpu()}),
                group,
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byLayerClass("Linear")).build());
    }
}
