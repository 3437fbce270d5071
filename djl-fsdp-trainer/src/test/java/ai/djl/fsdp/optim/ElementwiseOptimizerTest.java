package ai.djl.fsdp.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.tensor.op.FusedAdam;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.training.ParameterStore;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.PairList;
import java.util.Random;
import java.util.Set;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The element-wise optimizers against PyTorch's formulas written out in double precision, on a
 * shard whose elements belong to different parameter groups (weight decay on some, a scaled
 * learning rate on others, or one group), over several steps with a changing learning rate: Adam
 * runs its composed formula for the first grouping and libtorch's fused kernel for the others.
 */
class ElementwiseOptimizerTest {

    /** Not a multiple of a vector's lanes: the fused kernel's scalar tail runs too. */
    private static final int SIZE = 67;

    private static final int STEPS = 6;

    /** The learning rate of update {@code t} (from 1): a decaying schedule. */
    private static float rate(int t) {
        return 1e-2f / t;
    }

    /**
     * How the shard's elements are grouped: each grouping takes another path through Adam (the
     * composed formula where the learning rate differs between elements, libtorch's fused kernel
     * where it does not, with a per-element weight decay applied before it).
     */
    enum Groups {
        /** Half the elements decayed, a quarter with a doubled learning rate. */
        DECAY_AND_RATE,
        /** Half the elements decayed, one learning rate. */
        DECAY,
        /** Every element decayed, one learning rate. */
        ONE_GROUP;

        float decay(int i) {
            return this == ONE_GROUP || i % 2 == 0 ? 1f : 0f;
        }

        float scale(int i) {
            return this == DECAY_AND_RATE && i % 4 == 1 ? 2f : 1f;
        }

        ElementFactor decayFactor(NDManager manager) {
            return this == ONE_GROUP ? ElementFactor.ONE : perElement(manager, this::decay);
        }

        ElementFactor scaleFactor(NDManager manager) {
            return this == DECAY_AND_RATE ? perElement(manager, this::scale) : ElementFactor.ONE;
        }

        private static ElementFactor perElement(NDManager manager, IntToFloat factor) {
            float[] values = new float[SIZE];
            for (int i = 0; i < SIZE; i++) {
                values[i] = factor.apply(i);
            }
            return ElementFactor.perElement(manager.create(values));
        }
    }

    private interface IntToFloat {
        float apply(int i);
    }

    @ParameterizedTest
    @EnumSource(Groups.class)
    void adamWIsPyTorchsAdamW(Groups groups) {
        check(
                Adam.adamWBuilder()
                        .optLearningRateTracker((id, t) -> rate(t))
                        .optWeightDecays(0.1f)
                        .build(),
                groups,
                new AdamReference(true, 0.1, groups));
    }

    @ParameterizedTest
    @EnumSource(Groups.class)
    void adamIsPyTorchsAdamWithL2(Groups groups) {
        check(
                Adam.adamBuilder()
                        .optLearningRateTracker((id, t) -> rate(t))
                        .optWeightDecays(0.1f)
                        .build(),
                groups,
                new AdamReference(false, 0.1, groups));
    }

    /** SGD's momentum variants as PyTorch takes them: momentum, dampening, Nesterov. */
    enum Momentum {
        /** No momentum: the gradient itself. */
        NONE(0f, 0f, false),
        /** Heavy-ball momentum, the buffer as the step. */
        PLAIN(0.9f, 0f, false),
        /** Momentum whose buffer takes only half of each later gradient. */
        DAMPENED(0.9f, 0.5f, false),
        /** Nesterov's: the gradient plus momentum times the buffer as the step. */
        NESTEROV(0.9f, 0f, true);

        final float momentum;
        final float dampening;
        final boolean nesterov;

        Momentum(float momentum, float dampening, boolean nesterov) {
            this.momentum = momentum;
            this.dampening = dampening;
            this.nesterov = nesterov;
        }
    }

    @ParameterizedTest
    @EnumSource(Momentum.class)
    void sgdIsPyTorchsSgd(Momentum variant) {
        check(
                Sgd.builder()
                        .optLearningRateTracker((id, t) -> rate(t))
                        .optMomentum(variant.momentum)
                        .optDampening(variant.dampening)
                        .optNesterov(variant.nesterov)
                        .optWeightDecays(0.1f)
                        .build(),
                Groups.DECAY_AND_RATE,
                new SgdReference(variant, 0.1, Groups.DECAY_AND_RATE));
    }

    @Test
    void sgdRefusesNesterovWithoutMomentumOrWithDampening() {
        assertThrows(IllegalArgumentException.class, () -> Sgd.builder().optNesterov(true).build());
        assertThrows(
                IllegalArgumentException.class,
                () -> Sgd.builder().optMomentum(0.9f).optDampening(0.1f).optNesterov(true).build());
    }

    @Test
    void keepsItsStateWhereCheckpointsLookForIt() {
        // DJL's AdamW keeps the same moments under the same names: its checkpoints resume here.
        assertEquals(
                OptimizerStates.arrayKinds(Optimizer.adamW().build()),
                OptimizerStates.arrayKinds(Adam.adamWBuilder().build()));
        assertEquals(
                Set.of("means", "variances"),
                OptimizerStates.arrayKinds(Adam.adamBuilder().build()));
        // DJL's Sgd keeps another quantity (-lr times the buffer): another name, refused on load.
        assertEquals(Set.of("momentumBuffers"), OptimizerStates.arrayKinds(Sgd.builder().build()));
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Adam adam = Adam.adamWBuilder().build();
            adam.update("w", manager.ones(new Shape(3)), manager.ones(new Shape(3)));
            assertEquals(Set.of("means", "variances"), OptimizerStates.arrays(adam, "w").keySet());
            assertEquals(1, OptimizerStates.updateCounts(adam).get("w"));
        }
    }

    @Test
    void refusesPerElementClipping() {
        assertThrows(
                IllegalArgumentException.class, () -> Adam.adamWBuilder().optClipGrad(1f).build());
    }

    @Test
    void huggingFacesRuleSparesBiasesAndNorms() {
        BiPredicate<String, Block> rule = ParameterGroups.biasesAndNorms();
        Block linear = Linear.builder().setUnits(2).build();
        Block norm = LayerNorm.builder().build();
        Block rmsNorm = new LlamaRMSNorm();
        assertFalse(rule.test("transformer.h.0.attn.c_attn.weight", linear));
        assertTrue(rule.test("transformer.h.0.attn.c_attn.bias", linear));
        assertTrue(rule.test("transformer.h.0.ln_1.weight", norm), "a LayerNorm block's weight");
        assertTrue(rule.test("model.layers.0.input_layernorm.weight", rmsNorm));
        assertTrue(rule.test("model.norm.weight", linear), "a norm path segment");
        assertTrue(rule.test("model.layers.0.q_norm.weight", linear), "a *_norm path segment");
        assertFalse(rule.test("transformer.wte.weight", linear), "embeddings decay");
        assertFalse(rule.test("model.normalizer.weight", linear));
    }

    /** A block whose class name says RMSNorm, as Llama's does. */
    private static final class LlamaRMSNorm extends AbstractBlock {
        @Override
        protected NDList forwardInternal(
                ParameterStore store,
                NDList inputs,
                boolean training,
                PairList<String, Object> params) {
            return inputs;
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputs) {
            return inputs;
        }
    }

    /**
     * Runs the optimizer and the reference on the same gradients and compares how far each moved
     * the weights (relative error below 1e-5: the weights' own float32 rounding is about 2e-6 of
     * the distance); for Adam with one learning rate, also checks that libtorch's fused kernel
     * takes arrays like these wherever its entry point is bound.
     */
    private static void check(ElementwiseOptimizer optimizer, Groups groups, Reference reference) {
        Random random = new Random(7);
        float[] start = new float[SIZE];
        for (int i = 0; i < SIZE; i++) {
            start[i] = (float) random.nextGaussian();
        }
        double[] expected = new double[SIZE];
        for (int i = 0; i < SIZE; i++) {
            expected[i] = start[i];
        }
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray weight = manager.create(start);
            ElementFactor decay = groups.decayFactor(manager);
            ElementFactor scale = groups.scaleFactor(manager);
            NDArray grad = null;
            for (int t = 1; t <= STEPS; t++) {
                float[] values = new float[SIZE];
                for (int i = 0; i < SIZE; i++) {
                    values[i] = (float) random.nextGaussian() * (i % 3 == 0 ? 1e-3f : 1f);
                }
                grad = manager.create(values);
                optimizer.update("w", weight, grad, decay, scale);
                reference.step(expected, values, t);
            }
            float[] actual = weight.toFloatArray();
            double difference = 0;
            double norm = 0;
            for (int i = 0; i < SIZE; i++) {
                difference += Math.pow(actual[i] - expected[i], 2);
                norm += Math.pow(expected[i] - start[i], 2);
            }
            double error = Math.sqrt(difference / norm);
            assertTrue(error < 1e-5, "relative error of the weights' change " + error);
            if (optimizer instanceof Adam && scale.isUniform()) {
                boolean fusable =
                        FusedAdam.of(weight, grad, weight.zerosLike(), weight.zerosLike()) != null;
                assertEquals(FusedAdam.isBound(), fusable, "the fused kernel takes these arrays");
            }
        }
    }

    /** One optimizer's step in double precision, PyTorch's formula. */
    private interface Reference {
        void step(double[] p, float[] grad, int t);
    }

    private static final class AdamReference implements Reference {
        private final boolean decoupled;
        private final double weightDecay;
        private final Groups groups;
        private final double[] m = new double[SIZE];
        private final double[] v = new double[SIZE];

        AdamReference(boolean decoupled, double weightDecay, Groups groups) {
            this.decoupled = decoupled;
            this.weightDecay = weightDecay;
            this.groups = groups;
        }

        @Override
        public void step(double[] p, float[] grad, int t) {
            double beta1 = 0.9;
            double beta2 = 0.999;
            for (int i = 0; i < SIZE; i++) {
                double lr = Double.parseDouble(Float.toString(rate(t))) * groups.scale(i);
                double wd = weightDecay * groups.decay(i);
                double g = grad[i];
                if (decoupled) {
                    p[i] *= 1 - lr * wd;
                } else {
                    g += wd * p[i];
                }
                m[i] = beta1 * m[i] + (1 - beta1) * g;
                v[i] = beta2 * v[i] + (1 - beta2) * g * g;
                double denominator = Math.sqrt(v[i]) / Math.sqrt(1 - Math.pow(beta2, t)) + 1e-8;
                p[i] -= lr / (1 - Math.pow(beta1, t)) * m[i] / denominator;
            }
        }
    }

    /** {@code torch.optim.SGD}'s step: weight decay, then momentum, dampening and Nesterov. */
    private static final class SgdReference implements Reference {
        private final double momentum;
        private final double dampening;
        private final boolean nesterov;
        private final double weightDecay;
        private final Groups groups;
        private final double[] buffer = new double[SIZE];

        SgdReference(Momentum variant, double weightDecay, Groups groups) {
            this.momentum = Double.parseDouble(Float.toString(variant.momentum));
            this.dampening = Double.parseDouble(Float.toString(variant.dampening));
            this.nesterov = variant.nesterov;
            this.weightDecay = weightDecay;
            this.groups = groups;
        }

        @Override
        public void step(double[] p, float[] grad, int t) {
            for (int i = 0; i < SIZE; i++) {
                double lr = Double.parseDouble(Float.toString(rate(t))) * groups.scale(i);
                double g = grad[i] + weightDecay * groups.decay(i) * p[i];
                if (momentum != 0) {
                    buffer[i] = t == 1 ? g : momentum * buffer[i] + (1 - dampening) * g;
                    g = nesterov ? g + momentum * buffer[i] : buffer[i];
                }
                p[i] -= lr * g;
            }
        }
    }
}
