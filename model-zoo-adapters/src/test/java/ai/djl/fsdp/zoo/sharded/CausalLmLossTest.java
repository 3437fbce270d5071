package ai.djl.fsdp.zoo.sharded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.fsdp.tensor.op.ChunkedCrossEntropy;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The loss from hidden states and the head's weight (the head's product chunk by chunk) against the
 * loss from whole logits and against a plain float64 log-softmax: the loss and the gradients with
 * respect to the hidden states and the weight. With GPT-2's vocabulary the rows are more than one
 * chunk holds, so several chunks (101 rows, then 100) add to the weight's gradient; with a small
 * vocabulary all logits fit in one chunk and the loss is libtorch's cross-entropy with autograd.
 */
class CausalLmLossTest {

    private static final int VOCAB = 50257;

    /**
     * A vocabulary whose logits for all rows fit in one chunk: the loss is libtorch's own
     * cross-entropy with autograd.
     */
    private static final int SMALL_VOCAB = 1000;

    private static final int WIDTH = 16;
    private static final int BATCH = 3;
    private static final int LENGTH = 67;

    /** float32 against float64: the summation order of 50257-wide rows and of 201 rows. */
    private static final float TOLERANCE = 2e-5f;

    /** bfloat16 gradients against float64, relative to the largest: 2^-7. */
    private static final float BF16_TOLERANCE = 0x1p-7f;

    @Test
    void hiddenStatesGiveTheLossAndGradientsOfLogits() {
        lossAndGradientsOfLogits(VOCAB);
    }

    @Test
    void logitsOfOneChunkGiveTheSameLossAndGradients() {
        lossAndGradientsOfLogits(SMALL_VOCAB);
    }

    private static void lossAndGradientsOfLogits(int vocab) {
        for (long stepTokens : new long[] {0, 500}) {
            try (NDManager manager = TestModels.newManager()) {
                Inputs in = Inputs.random(manager, 7, vocab);
                Result reference = in.reference(stepTokens);
                Result fromLogits = in.run(stepTokens, false, true);
                Result fused = in.run(stepTokens, true, true);
                reference.assertClose("logits", fromLogits);
                reference.assertClose("hidden states", fused);
            }
        }
    }

    /**
     * In bfloat16 the chunks' weight-gradient products pass through one reused bfloat16 buffer and
     * are widened into the float32 sum: against float64 from the same bfloat16 inputs, within what
     * bfloat16's rounding of the products and of the gradients allows.
     */
    @Test
    void bfloat16ChunksAddUpToTheFloat64Gradients() {
        bfloat16AgainstFloat64(VOCAB);
    }

    /** The same bound when all logits fit in one chunk: the head's products in bfloat16. */
    @Test
    void bfloat16LossOfOneChunkIsTheFloat64Loss() {
        bfloat16AgainstFloat64(SMALL_VOCAB);
    }

    private static void bfloat16AgainstFloat64(int vocab) {
        try (NDManager manager = TestModels.newManager()) {
            Inputs in = Inputs.random(manager, 13, vocab).in(Precision.BFLOAT16);
            Result reference = in.reference(0);
            Result fused = in.run(0, true, true);
            assertTrue(fused.weightHasGradient);
            // The gradients are bfloat16 (the leaves' type): within two of its units in the last
            // place of the largest value, 2^-7. Seen here: 3.4e-3 and 3.8e-3 under native, avx2
            // and default kernels alike, the loss 5e-5.
            assertTrue(
                    Math.abs(fused.loss - reference.loss) <= 1e-3 * Math.abs(reference.loss),
                    "loss " + fused.loss + " against " + reference.loss);
            assertTrue(Result.relative(fused.hidden, reference.hidden) <= BF16_TOLERANCE);
            assertTrue(
                    Result.relative(fused.weight, reference.weight) <= BF16_TOLERANCE,
                    "weight gradient: " + Result.relative(fused.weight, reference.weight));
        }
    }

    /**
     * bfloat16 logits keep their gradient in bfloat16, computed chunk by chunk in float32: exactly
     * what the float32 loss gives the same values' float32 copy, rounded once to bfloat16 (as
     * backward through a cast would round it), with no float32 copy of the logits or of their
     * gradient.
     */
    @Test
    void bfloat16LogitsGetTheFloat32GradientRoundedOnce() {
        roundedOnce(VOCAB);
    }

    @Test
    void bfloat16LogitsOfOneChunkGetTheFloat32GradientRoundedOnce() {
        roundedOnce(SMALL_VOCAB);
    }

    private static void roundedOnce(int vocab) {
        try (NDManager manager = TestModels.newManager()) {
            Inputs in = Inputs.random(manager, 17, vocab);
            NDArray logits =
                    Precision.BFLOAT16.cast(
                            in.hidden.reshape(BATCH, LENGTH, WIDTH).matMul(in.weight.transpose()));
            NDArray widened = Precision.FLOAT32.cast(logits);
            float[] narrow = lossAndGradient(logits, in.labels);
            float[] wide = lossAndGradient(widened, in.labels);
            assertEquals(wide[0], narrow[0], "the loss is the float32 loss");
            NDArray expected =
                    Precision.FLOAT32.cast(Precision.BFLOAT16.cast(manager.create(wide).get("1:")));
            assertEquals(
                    0f,
                    TestModels.maxDiff(manager.create(narrow).get("1:"), expected),
                    "the gradient is the float32 gradient rounded to bfloat16");
        }
    }

    /** The loss, then the gradient of the logits (widened to float32), flattened. */
    private static float[] lossAndGradient(NDArray logits, NDArray labels) {
        NDArray leaf = logits.duplicate();
        leaf.setRequiresGradient(true);
        try (GradientCollector collector = leaf.getManager().getEngine().newGradientCollector()) {
            NDArray value = new CausalLmLoss().evaluate(new NDList(labels), new NDList(leaf));
            collector.backward(value);
            float[] gradient =
                    Precision.FLOAT32.cast(Autograd.gradientOf(leaf)).reshape(-1).toFloatArray();
            float[] out = new float[gradient.length + 1];
            out[0] = value.getFloat();
            System.arraycopy(gradient, 0, out, 1, gradient.length);
            return out;
        }
    }

    @Test
    void theTestsVocabulariesTakeEachPath() {
        int rows = BATCH * LENGTH;
        assertFalse(ChunkedCrossEntropy.fitsOneChunk(rows, VOCAB));
        assertTrue(ChunkedCrossEntropy.fitsOneChunk(rows, SMALL_VOCAB));
    }

    @Test
    void aFrozenHeadGetsNoGradientAndEvaluationOnlyTheLoss() {
        frozenHead(VOCAB);
    }

    @Test
    void aFrozenHeadOfOneChunkGetsNoGradientAndEvaluationOnlyTheLoss() {
        frozenHead(SMALL_VOCAB);
    }

    /**
     * A sharded model's head weight is a view of its unit's gradient leaf (the gathered flat
     * buffer), not a leaf itself: its gradient still reaches the buffer, chunk by chunk.
     */
    @Test
    void aHeadWeightThatIsAViewOfTheGradientLeafGetsItsGradient() {
        for (int vocab : new int[] {VOCAB, SMALL_VOCAB}) {
            try (NDManager manager = TestModels.newManager()) {
                Inputs in = Inputs.random(manager, 13, vocab);
                Result reference = in.reference(0);
                NDArray buffer = in.weight.reshape(-1).duplicate();
                buffer.setRequiresGradient(true);
                NDArray h = in.hidden.duplicate();
                h.setRequiresGradient(true);
                try (GradientCollector collector = manager.getEngine().newGradientCollector()) {
                    NDArray view = buffer.reshape(vocab, WIDTH);
                    NDArray states = h.reshape(BATCH, LENGTH, WIDTH);
                    NDArray value =
                            new CausalLmLoss()
                                    .evaluate(new NDList(in.labels), new NDList(states, view));
                    collector.backward(value);
                    NDArray gradient = Autograd.gradientOf(buffer);
                    assertTrue(
                            gradient != null, "the buffer got no gradient (vocab " + vocab + ")");
                    reference.assertClose(
                            "vocab " + vocab,
                            new Result(
                                    value.getFloat(),
                                    h.getGradient(),
                                    gradient.reshape(vocab, WIDTH),
                                    true));
                }
            }
        }
    }

    private static void frozenHead(int vocab) {
        try (NDManager manager = TestModels.newManager()) {
            Inputs in = Inputs.random(manager, 11, vocab);
            Result reference = in.reference(0);
            Result frozen = in.run(0, true, false);
            assertEquals(reference.loss, frozen.loss, TOLERANCE);
            assertTrue(TestModels.maxDiff(reference.hidden, frozen.hidden) <= TOLERANCE);
            assertFalse(frozen.weightHasGradient);
            CausalLmLoss loss = new CausalLmLoss();
            float evaluated =
                    loss.evaluate(new NDList(in.labels), new NDList(in.hidden, in.weight))
                            .getFloat();
            assertEquals(reference.loss, evaluated, TOLERANCE);
        }
    }

    /** Hidden states, head weight and labels, a fifth of them ignored. */
    private record Inputs(NDArray hidden, NDArray weight, NDArray labels) {

        static Inputs random(NDManager manager, int seed, int vocab) {
            Random random = new Random(seed);
            float[] h = new float[BATCH * LENGTH * WIDTH];
            for (int i = 0; i < h.length; i++) {
                h[i] = (float) random.nextGaussian();
            }
            float[] w = new float[vocab * WIDTH];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) (0.5 * random.nextGaussian());
            }
            long[] labels = new long[BATCH * LENGTH];
            for (int i = 0; i < labels.length; i++) {
                labels[i] = random.nextInt(5) == 0 ? CausalLmLoss.IGNORE : random.nextInt(vocab);
            }
            return new Inputs(
                    manager.create(h, new Shape(BATCH, LENGTH, WIDTH)),
                    manager.create(w, new Shape(vocab, WIDTH)),
                    manager.create(labels, new Shape(BATCH, LENGTH)));
        }

        /** The same values rounded to {@code precision}. */
        Inputs in(Precision precision) {
            return new Inputs(precision.cast(hidden), precision.cast(weight), labels);
        }

        /** The loss and gradients in float64 with DJL's log-softmax, as a model would compute. */
        Result reference(long stepTokens) {
            NDArray h = Precision.FLOAT32.cast(hidden).toType(DataType.FLOAT64, true);
            NDArray w = Precision.FLOAT32.cast(weight).toType(DataType.FLOAT64, true);
            h.setRequiresGradient(true);
            w.setRequiresGradient(true);
            try (GradientCollector collector = h.getManager().getEngine().newGradientCollector()) {
                NDArray logits = h.reshape(-1, WIDTH).matMul(w.transpose());
                NDArray flat = labels.reshape(-1);
                NDArray kept = flat.neq(CausalLmLoss.IGNORE);
                NDArray mask = kept.toType(DataType.FLOAT64, false);
                NDArray picked =
                        logits.logSoftmax(1).gather(flat.mul(kept).reshape(-1, 1), 1).reshape(-1);
                double divisor = stepTokens > 0 ? stepTokens : mask.sum().getDouble();
                NDArray loss = picked.mul(mask).sum().neg().div(divisor);
                collector.backward(loss);
                return new Result(
                        (float) loss.getDouble(),
                        h.getGradient().toType(DataType.FLOAT32, true),
                        w.getGradient().toType(DataType.FLOAT32, true),
                        true);
            }
        }

        /** The zoo's loss from logits {@code h W^T} or from {@code (h, W)}. */
        Result run(long stepTokens, boolean fromHiddenStates, boolean trainWeight) {
            NDArray h = hidden.duplicate();
            NDArray w = weight.duplicate();
            h.setRequiresGradient(true);
            w.setRequiresGradient(trainWeight);
            CausalLmLoss loss = new CausalLmLoss();
            loss.setStepTokens(stepTokens);
            try (GradientCollector collector = h.getManager().getEngine().newGradientCollector()) {
                // The hidden states are a graph's output, as a model's are, not a leaf.
                NDArray states = h.reshape(BATCH, LENGTH, WIDTH);
                NDList predictions =
                        fromHiddenStates
                                ? new NDList(states, w)
                                : new NDList(states.matMul(w.transpose()));
                NDArray value = loss.evaluate(new NDList(labels), predictions);
                collector.backward(value);
                return new Result(
                        value.getFloat(),
                        h.getGradient(),
                        trainWeight ? w.getGradient() : null,
                        trainWeight && w.hasGradient());
            }
        }
    }

    private record Result(float loss, NDArray hidden, NDArray weight, boolean weightHasGradient) {

        /** The largest difference, relative to the largest magnitude of {@code exact}. */
        static float relative(NDArray actual, NDArray exact) {
            NDArray e = Precision.FLOAT32.cast(exact);
            return TestModels.maxDiff(Precision.FLOAT32.cast(actual), e) / e.abs().max().getFloat();
        }

        void assertClose(String what, Result actual) {
            assertEquals(loss, actual.loss, TOLERANCE * Math.abs(loss), what + ": loss");
            float h = TestModels.maxDiff(hidden, actual.hidden);
            float w = TestModels.maxDiff(weight, actual.weight);
            float scale = Precision.FLOAT32.cast(hidden).abs().max().getFloat();
            assertTrue(h <= TOLERANCE * scale, what + ": hidden-state gradient off by " + h);
            assertTrue(w <= TOLERANCE * scale, what + ": weight gradient off by " + w);
        }
    }
}
