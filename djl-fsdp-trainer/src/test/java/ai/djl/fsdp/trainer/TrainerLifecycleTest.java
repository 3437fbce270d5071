package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import ai.djl.training.loss.Loss;
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

    private static final Loss LOSS = Loss.l2Loss();

    private static Model twoLinears() {
        Model model = Model.newInstance("two-linears", Device.cpu());
        model.setBlock(
                new SequentialBlock()
                        .add(Linear.builder().setUnits(4).build())
                        .add(Linear.builder().setUnits(1).build()));
        return model;
    }

    private static FsdpTrainer newTrainer(
            Model model, ProcessGroup group, DefaultTrainingConfig config) {
        return FullyShardedDataParallel.newTrainer(
                model,
                config.optDevices(new Device[] {Device.cpu()}),
                group,
                FsdpConfig.builder().optWrapPolicy(WrapPolicy.byLayerClass("Linear")).build());
    }
}
