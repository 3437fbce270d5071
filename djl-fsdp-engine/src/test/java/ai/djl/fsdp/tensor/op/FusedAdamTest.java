package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * libtorch's fused AdamW update against PyTorch's formula in double precision over several steps,
 * on arrays in a recorded graph too, and the arrays it refuses before they reach C++.
 */
class FusedAdamTest {

    /** Not a multiple of a vector's lanes: the kernel's scalar tail runs as well. */
    private static final int SIZE = 53;

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void theEntryPointIsBoundOnLinuxX86() {
        boolean linuxX86 =
                System.getProperty("os.name", "").toLowerCase().startsWith("linux")
                        && System.getProperty("os.arch", "").matches("amd64|x86_64");
        assertEquals(linuxX86, FusedAdam.isBound());
    }

    @Test
    void stepsAsPyTorchsAdamW() {
        double rate = 1e-2;
        double beta1 = 0.9;
        double beta2 = 0.999;
        double weightDecay = 0.1;
        double epsilon = 1e-8;
        Random random = new Random(5);
        float[] start = new float[SIZE];
        double[] p = new double[SIZE];
        double[] m = new double[SIZE];
        double[] v = new double[SIZE];
        for (int i = 0; i < SIZE; i++) {
            start[i] = (float) random.nextGaussian();
            p[i] = start[i];
        }
        NDArray weight = manager.create(start);
        NDArray mean = manager.zeros(new Shape(SIZE));
        NDArray variance = manager.zeros(new Shape(SIZE));
        for (int t = 1; t <= 5; t++) {
            float[] g = new float[SIZE];
            for (int i = 0; i < SIZE; i++) {
                g[i] = (float) random.nextGaussian() * (i % 3 == 0 ? 1e-3f : 1f);
            }
            NDArray grad = manager.create(g);
            FusedAdam.update(
                    weight, grad, mean, variance, t, rate, beta1, beta2, weightDecay, epsilon);
            assertArrayEquals(g, grad.toFloatArray(), "the gradient is read, not written");
            for (int i = 0; i < SIZE; i++) {
                double gi = g[i];
                p[i] *= 1 - rate * weightDecay;
                m[i] = beta1 * m[i] + (1 - beta1) * gi;
                v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
                double denominator = Math.sqrt(v[i]) / Math.sqrt(1 - Math.pow(beta2, t)) + epsilon;
                p[i] -= rate / (1 - Math.pow(beta1, t)) * m[i] / denominator;
            }
        }
        assertClose(p, weight.toFloatArray(), "weights");
        assertClose(m, mean.toFloatArray(), "first moment");
        assertClose(v, variance.toFloatArray(), "second moment");
    }

    @Test
    void updatesAParameterThatRecordsGradientsInsideACollector() {
        NDArray weight = manager.ones(new Shape(SIZE));
        weight.setRequiresGradient(true);
        NDArray grad = manager.ones(new Shape(SIZE));
        NDArray mean = manager.zeros(new Shape(SIZE));
        NDArray variance = manager.zeros(new Shape(SIZE));
        try (GradientCollector collector = manager.getEngine().newGradientCollector()) {
            assertTrue(Autograd.isGradMode());
            FusedAdam.update(weight, grad, mean, variance, 1, 0.5, 0.9, 0.999, 0, 1e-8);
            assertTrue(Autograd.isGradMode(), "grad mode is restored");
        }
        // The first step moves every weight by the learning rate: m / sqrt(v) is 1 once corrected.
        assertEquals(0.5f, weight.getFloat(0), 1e-6f);
    }

    @Test
    void refusesArraysTheKernelWouldThrowOn() {
        NDArray a = manager.ones(new Shape(4, 6));
        NDArray b = manager.ones(new Shape(4, 6));
        NDArray c = manager.zeros(new Shape(4, 6));
        NDArray d = manager.zeros(new Shape(4, 6));
        assertTrue(FusedAdam.supports(a, b, c, d));
        NDArray transposed = manager.ones(new Shape(6, 4)).transpose();
        assertFalse(TensorMemory.isContiguous(transposed));
        assertFalse(FusedAdam.supports(a, transposed, c, d), "a transposed gradient");
        assertFalse(FusedAdam.supports(a, b, c, manager.zeros(new Shape(5))), "another size");
        assertFalse(FusedAdam.supports(a, b.toType(DataType.FLOAT64, false), c, d), "a mixed type");
        NDArray ints = manager.ones(new Shape(4, 6), DataType.INT32);
        assertFalse(FusedAdam.supports(ints, ints, ints, ints), "integers");
        IllegalArgumentException refused =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> FusedAdam.update(a, transposed, c, d, 1, 1e-3, 0.9, 0.999, 0, 1e-8));
        assertTrue(refused.getMessage().contains("FusedAdam.supports"), refused.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> FusedAdam.update(a, b, c, d, 0, 1e-3, 0.9, 0.999, 0, 1e-8));
    }

    @Test
    void updatesFloat64() {
        NDArray weight = manager.ones(new Shape(SIZE), DataType.FLOAT64);
        NDArray grad = manager.ones(new Shape(SIZE), DataType.FLOAT64).neg();
        NDArray mean = manager.zeros(new Shape(SIZE), DataType.FLOAT64);
        NDArray variance = manager.zeros(new Shape(SIZE), DataType.FLOAT64);
        assertTrue(FusedAdam.supports(weight, grad, mean, variance));
        FusedAdam.update(weight, grad, mean, variance, 1, 0.25, 0.9, 0.999, 0, 1e-8);
        // One step moves each weight by the learning rate, less what epsilon takes off.
        assertEquals(1 + 0.25 / (1 + 1e-8), weight.toDoubleArray()[SIZE - 1], 1e-15);
    }

    private static void assertClose(double[] expected, float[] actual, String what) {
        double difference = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            difference += Math.pow(actual[i] - expected[i], 2);
            norm += expected[i] * expected[i];
        }
        double error = Math.sqrt(difference / norm);
        assertTrue(error < 1e-6, what + ": relative error " + error);
    }
}
