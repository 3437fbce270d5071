package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * libtorch's cross-entropy through the dispatcher against the same loss in DJL's operators: the
 * summed loss over the rows whose label counts, and the logits' gradient (zero on ignored rows).
 */
class CrossEntropyTest {

    private static final long IGNORED = -100;

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(17);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void sumAndGradientEqualTheComposedLoss() {
        NDArray logits = manager.randomNormal(new Shape(6, 11)).mul(3);
        long[] labels = {3, IGNORED, 0, 10, IGNORED, 7};
        NDArray[] fused = run(logits, labels, true);
        NDArray[] composed = run(logits, labels, false);
        assertEquals(composed[0].getFloat(), fused[0].getFloat(), 1e-5f);
        assertArrayEquals(composed[1].toFloatArray(), fused[1].toFloatArray(), 1e-6f);
        float[] gradient = fused[1].toFloatArray();
        for (int j = 0; j < 11; j++) {
            assertEquals(0f, gradient[11 + j], "an ignored row has no gradient");
        }
    }

    @Test
    void everyRowIgnoredGivesZero() {
        NDArray logits = manager.randomNormal(new Shape(2, 5));
        NDArray[] fused = run(logits, new long[] {IGNORED, IGNORED}, true);
        assertEquals(0f, fused[0].getFloat());
        assertArrayEquals(new float[10], fused[1].toFloatArray());
    }

    @Test
    void aLabelOutsideTheClassesIsRefused() {
        NDArray logits = manager.randomNormal(new Shape(2, 5));
        NDArray labels = manager.create(new long[] {1, 5});
        assertThrows(IllegalStateException.class, () -> CrossEntropy.sum(logits, labels, IGNORED));
    }

    private NDArray[] run(NDArray values, long[] labelValues, boolean fused) {
        NDArray logits = values.duplicate();
        logits.setRequiresGradient(true);
        NDArray labels = manager.create(labelValues);
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray loss =
                    fused ? CrossEntropy.sum(logits, labels, IGNORED) : composed(logits, labels);
            collector.backward(loss);
            return new NDArray[] {loss.duplicate(), logits.getGradient().duplicate()};
        }
    }

    private static NDArray composed(NDArray logits, NDArray labels) {
        NDArray counted = labels.neq(IGNORED);
        NDArray picked =
                logits.logSoftmax(1).gather(labels.mul(counted).reshape(-1, 1), 1).reshape(-1);
        return picked.mul(counted.toType(DataType.FLOAT32, false)).sum().neg();
    }
}
