package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.ConstantInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.util.PairList;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * A block that counts its training forwards in a parameter of its own, in a unit with a trainable
 * layer (so backward recomputes the unit): named with {@code FsdpConfig.optBuffers}, the count is
 * each batch once, though FULL_SHARD recomputes the unit in backward; left a frozen parameter of
 * the unit, the recompute counts every batch twice.
 */
class BufferRuleTest {

    private static final int STEPS = 3;

    /** Passes its input through and adds 1 to {@code count} in a training forward. */
    static final class CountingBlock extends AbstractBlock {

        private final Parameter count;

        CountingBlock() {
            count =
                    addParameter(
                            Parameter.builder()
                                    .setName("count")
                                    .setType(Parameter.Type.OTHER)
                                    .optRequiresGrad(false)
                                    .optInitializer(new ConstantInitializer(0))
                                    .optShape(new Shape(1))
                                    .build());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            NDArray value = store.getValue(count, inputs.head().getDevice(), training);
            if (training) {
                value.addi(1);
            }
            return inputs;
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    @Test
    void namedBufferCountsEachBatchOnce() {
        assertEquals(STEPS, countAfterTraining(p -> p.getName().equals("count")));
        assertEquals(2 * STEPS, countAfterTraining(p -> false), "recomputed without the rule");
    }

    @Test
    void trainableBufferIsRefused() {
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> countAfterTraining(p -> p.getName().equals("weight")));
        assertTrue(refused.getMessage().contains("takes a gradient"), refused.getMessage());
    }

    private static float countAfterTraining(Predicate<Parameter> buffers) {
        SequentialBlock net =
                new SequentialBlock()
                        .add(
                                new SequentialBlock()
                                        .add(new CountingBlock())
                                        .add(Linear.builder().setUnits(2).build()))
                        .add(Linear.builder().setUnits(1).build());
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(Loss.l2Loss()).optDevices(new Device[] {Device.cpu()});
        try (Model model = Model.newInstance("counting", Device.cpu());
                NDManager manager = NDManager.newBaseManager(Device.cpu());
                ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            model.setBlock(net);
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            // The counter and a trainable layer: a unit alone on the data with
                            // only frozen parameters would never be recomputed.
                            .optWrapPolicy(WrapPolicy.byLayerClass("SequentialBlock"))
                            .optBuffers(buffers)
                            .build();
            try (Trainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                trainer.initialize(new Shape(4, 3));
                for (int step = 0; step < STEPS; step++) {
                    NDArray x = manager.ones(new Shape(4, 3), DataType.FLOAT32);
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDArray out = trainer.forward(new NDList(x)).head();
                        collector.backward(out.sum());
                    }
                    trainer.step();
                }
            }
            return net.getParameters()
                    .get("01SequentialBlock_01CountingBlock_count")
                    .getArray()
                    .getFloat(0);
        }
    }
}
