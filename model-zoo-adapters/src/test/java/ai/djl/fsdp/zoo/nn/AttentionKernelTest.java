package ai.djl.fsdp.zoo.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fused kernel computes what the explicit attention computes, forward and backward (gradients
 * where the loss weighs only queries that see a key). Tolerance: 1e-5 absolute on outputs and
 * gradients of unit scale (both are float32; they differ in summation order only), relative 1e-4 on
 * whole-model parameter gradients.
 */
class AttentionKernelTest {

    private static final float TOLERANCE = 1e-5f;

    @Test
    void fusedAttentionMatchesExplicitWithGradients() {
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(3);
            Shape shape = new Shape(2, 3, 24, 8);
            NDArray causal = Attention.causalBias(manager, null, 2, 0, 24);
            NDArray padded =
                    Attention.causalBias(
                            manager, leftPadding(manager, new int[] {0, 5}, 24), 2, 0, 24);
            // A cache of 16 positions, 8 new queries.
            NDArray cached = Attention.causalBias(manager, null, 2, 16, 8);
            // Both: [B, 1, T, S] with fewer queries than keys.
            NDArray paddedCached =
                    Attention.causalBias(
                            manager, leftPadding(manager, new int[] {0, 5}, 24), 2, 16, 8);
            // A sliding window of 5 without a mask: [1, 1, T, S].
            NDArray windowed = Attention.causalBias(manager, null, 2, 0, 24, 5);
            for (NDArray bias : new NDArray[] {causal, padded, cached, paddedCached, windowed}) {
                int rank = bias.getShape().dimension();
                long queries = bias.getShape().get(rank - 2);
                NDArray q = manager.randomNormal(new Shape(2, 3, queries, 8));
                NDArray k = manager.randomNormal(shape);
                NDArray v = manager.randomNormal(shape);
                // A query that sees no key (left padding) gets the same output from both, but
                // not the same gradient: such rows are padding and must carry no loss.
                NDArray seesAKey = bias.max(new int[] {rank - 1}, true).gt(Attention.MASKED);
                NDArray g =
                        manager.randomNormal(q.getShape())
                                .mul(seesAKey.toType(DataType.FLOAT32, false));
                List<NDArray> explicit =
                        outputAndGradients(AttentionKernel.EXPLICIT, q, k, v, bias, g);
                List<NDArray> fused = outputAndGradients(AttentionKernel.SDPA, q, k, v, bias, g);
                for (int i = 0; i < explicit.size(); i++) {
                    float diff = TestModels.maxDiff(explicit.get(i), fused.get(i));
                    assertTrue(
                            diff < TOLERANCE,
                            "bias " + bias.getShape() + ", result " + i + " differs by " + diff);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-tiny"})
    void modelsAgreeForwardAndBackward(String name) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded(name, manager, 7);
            NDArray ids = TestModels.tokens(manager, 2, 12, 3);
            NDArray mask = leftPadding(manager, new int[] {3, 0}, 12);
            NDArray g = manager.randomNormal(new Shape(2, 12, model.getConfig().vocabSize()));
            for (NDArray m : new NDArray[] {null, mask}) {
                assertEquals(
                        model.getConfig().numLayers(), AttentionKernel.EXPLICIT.applyTo(model));
                List<NDArray> explicit = logitsAndGradients(model, ids, m, g);
                AttentionKernel.SDPA.applyTo(model);
                List<NDArray> fused = logitsAndGradients(model, ids, m, g);
                for (int i = 0; i < explicit.size(); i++) {
                    float scale = explicit.get(i).abs().max().getFloat();
                    float diff = TestModels.maxDiff(explicit.get(i), fused.get(i));
                    assertTrue(
                            diff <= 1e-4f * scale + 1e-7f,
                            name
                                    + " mask="
                                    + (m != null)
                                    + ": result "
                                    + i
                                    + " differs by "
                                    + diff
                                    + " of "
                                    + scale);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-tiny"})
    void cachedDecodingMatchesExplicit(String name) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded(name, manager, 5);
            NDArray ids = TestModels.tokens(manager, 2, 7, 1);
            NDArray full = TestModels.logits(model, ids, null);
            AttentionKernel.SDPA.applyTo(model);
            ParameterStore ps = new ParameterStore(manager, false);
            try (KvCache cache = new KvCache(manager, model.getConfig().numLayers())) {
                NDArray prefill = model.forward(ps, ids.get(":, :4"), null, cache, false);
                assertTrue(TestModels.maxDiff(prefill, full.get(":, :4")) < TOLERANCE);
                for (int t = 4; t < 7; t++) {
                    NDIndex next = new NDIndex(":, {}:{}", t, t + 1);
                    NDArray step = model.forward(ps, ids.get(next), null, cache, false);
                    assertTrue(TestModels.maxDiff(step, full.get(next)) < TOLERANCE);
                }
            }
        }
    }

    @Test
    void namesParse() {
        assertEquals(AttentionKernel.SDPA, AttentionKernel.of("SDPA"));
        assertEquals("explicit", AttentionKernel.EXPLICIT.getName());
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> AttentionKernel.of("flash"));
        assertTrue(error.getMessage().contains("explicit, sdpa"), error.getMessage());
    }

    private static List<NDArray> outputAndGradients(
            AttentionKernel kernel, NDArray q, NDArray k, NDArray v, NDArray bias, NDArray g) {
        List<NDArray> leaves = new ArrayList<>();
        for (NDArray x : new NDArray[] {q, k, v}) {
            NDArray leaf = x.duplicate();
            leaf.setRequiresGradient(true);
            leaves.add(leaf);
        }
        List<NDArray> results = new ArrayList<>();
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray y =
                    Attention.scaledDotProduct(
                            kernel, leaves.get(0), leaves.get(1), leaves.get(2), bias, 0, true);
            collector.backward(y.mul(g).sum());
            results.add(y.stopGradient());
        }
        for (NDArray leaf : leaves) {
            results.add(leaf.getGradient().duplicate());
        }
        return results;
    }

    private static List<NDArray> logitsAndGradients(
            CausalLM model, NDArray ids, NDArray mask, NDArray g) {
        List<NDArray> results = new ArrayList<>();
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            for (Pair<String, Parameter> p : model.getParameters()) {
                NDArray gradient = p.getValue().getArray().getGradient();
                gradient.subi(gradient);
            }
            NDArray logits =
                    model.forward(
                            new ParameterStore(ids.getManager(), false), ids, mask, null, false);
            NDArray loss = logits.mul(g);
            if (mask != null) {
                loss = loss.mul(mask.toType(DataType.FLOAT32, false).expandDims(2));
            }
            collector.backward(loss.sum());
            results.add(logits.stopGradient());
        }
        for (Pair<String, Parameter> p : model.getParameters()) {
            results.add(p.getValue().getArray().getGradient().duplicate());
        }
        return results;
    }

    /** Returns a {@code [B, length]} mask whose row {@code b} starts with {@code pads[b]} zeros. */
    private static NDArray leftPadding(NDManager manager, int[] pads, int length) {
        long[] mask = new long[pads.length * length];
        for (int b = 0; b < pads.length; b++) {
            for (int t = pads[b]; t < length; t++) {
                mask[b * length + t] = 1;
            }
        }
        return manager.create(mask).reshape(pads.length, length);
    }
}
