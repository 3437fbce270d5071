package ai.djl.fsdp.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.core.Linear;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Parameter groups become per-element factors on exactly the elements each shard holds. */
class ParameterGroupsTest {

    private static final ParameterGroups NO_DECAY_ON_BIASES =
            ParameterGroups.builder()
                    .optNoDecay(ParameterGroups.biasesAndNorms())
                    .optLearningRateScale((name, block) -> name.endsWith("weight"), 0.5f)
                    .build();

    @Test
    void eachShardGetsTheFactorsOfTheElementsItHolds() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Block layer = Linear.builder().setUnits(3).build();
            Parameter weight = parameter(manager, "weight", new Shape(2, 2));
            Parameter bias = parameter(manager, "bias", new Shape(3));
            Map<Parameter, Pair<String, Block>> owners = new IdentityHashMap<>();
            owners.put(weight, new Pair<>("layer.weight", layer));
            owners.put(bias, new Pair<>("layer.bias", layer));
            // 7 elements over 3 ranks, shards of 3: [w0 w1 w2] [w3 b0 b1] [b2 pad pad].
            List<float[]> decays = List.of(new float[] {1}, new float[] {1, 0, 0}, new float[] {0});
            List<float[]> scales =
                    List.of(new float[] {0.5f}, new float[] {0.5f, 1, 1}, new float[] {1});
            for (int shard = 0; shard < 3; shard++) {
                FlatParameter flat =
                        new ShardLoader(3, shard, manager, null, null)
                                .load("u", true, List.of(weight, bias));
                ParameterGroups.ShardFactors factors =
                        NO_DECAY_ON_BIASES.shardFactors(flat, owners, true);
                assertArrayEquals(decays.get(shard), values(factors.decay()), "decay " + shard);
                assertArrayEquals(
                        scales.get(shard), values(factors.learningRateScale()), "scale " + shard);
                // Without weight decay no decay factors are kept.
                assertTrue(
                        NO_DECAY_ON_BIASES.shardFactors(flat, owners, false).decay().isUniform());
            }
        }
    }

    @Test
    void djlsOptimizersRefuseGroupsTheyCannotApply() {
        Optimizer djl = Optimizer.adamW().optLearningRateTracker(Tracker.fixed(1e-3f)).build();
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ShardedOptimizer.checkGroups(djl, NO_DECAY_ON_BIASES));
        assertTrue(e.getMessage().contains("Adam.adamWBuilder()"), e.getMessage());
        ShardedOptimizer.checkGroups(djl, ParameterGroups.ALL);
        ShardedOptimizer.checkGroups(Adam.adamWBuilder().build(), NO_DECAY_ON_BIASES);
    }

    /** A uniform factor as one value, a per-element one as its values. */
    private static float[] values(ElementFactor factor) {
        return factor.isUniform()
                ? new float[] {factor.getValue()}
                : factor.getPerElement().toFloatArray();
    }

    private static Parameter parameter(NDManager manager, String name, Shape shape) {
        Parameter parameter =
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(shape)
                        .optInitializer(Initializer.ONES)
                        .build();
        parameter.initialize(manager, DataType.FLOAT32);
        return parameter;
    }
}
