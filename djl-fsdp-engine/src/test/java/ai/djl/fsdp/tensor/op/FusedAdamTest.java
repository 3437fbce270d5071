package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.Device;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * libtorch's fused AdamW update against PyTorch's formula in double precision over several steps,
 * on a view into a larger array, on a parameter that records gradients, and the arrays it refuses
 * before they reach C++ (which would read them wrongly or throw).
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
    void theEntryPointIsBoundOnLinuxX86UnlessTurnedOff() {
        boolean linuxX86 =
                System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")
                        && System.getProperty("os.arch", "").matches("amd64|x86_64");
        boolean off = "false".equalsIgnoreCase(System.getProperty(FusedAdam.FUSED_PROPERTY));
        assertEquals(linuxX86 && !off, FusedAdam.isBound());
    }

    @Test
    void stepsAsPyTorchsAdamW() {
        assumeTrue(FusedAdam.isBound(), "libtorch's entry point is not bound here");
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
        // The weights are a view into a larger array, at an offset, as a shard can be.
        NDArray base = manager.zeros(new Shape(SIZE + 10));
        NDArray weight = base.get("5:" + (SIZE + 5));
        weight.set(new NDIndex(":"), manager.create(start));
        NDArray mean = manager.zeros(new Shape(SIZE));
        NDArray variance = manager.zeros(new Shape(SIZE));
        for (int t = 1; t <= 5; t++) {
            float[] g = new float[SIZE];
            for (int i = 0; i < SIZE; i++) {
                g[i] = (float) random.nextGaussian() * (i % 3 == 0 ? 1e-3f : 1f);
            }
            NDArray grad = manager.create(g);
            FusedAdam fused = FusedAdam.of(weight, grad, mean, variance);
            assertNotNull(fused);
            fused.update(t, rate, beta1, beta2, weightDecay, epsilon);
            assertArrayEquals(g, grad.toFloatArray(), "the gradient is read, not written");
            for (int i = 0; i < SIZE; i++) {
                p[i] *= 1 - rate * weightDecay;
                m[i] = beta1 * m[i] + (1 - beta1) * g[i];
                v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
                double denominator = Math.sqrt(v[i]) / Math.sqrt(1 - Math.pow(beta2, t)) + epsilon;
                p[i] -= rate / (1 - Math.pow(beta1, t)) * m[i] / denominator;
            }
        }
        float[] moved = weight.toFloatArray();
        double[] change = new double[SIZE];
        float[] actualChange = new float[SIZE];
        for (int i = 0; i < SIZE; i++) {
            change[i] = p[i] - start[i];
            actualChange[i] = moved[i] - start[i];
        }
        // The change is about 0.05 a weight; float32's rounding of a weight near 1 is 6e-8.
        assertClose(change, actualChange, 1e-5, "the weights' change");
        assertClose(m, mean.toFloatArray(), 1e-6, "first moment");
        assertClose(v, variance.toFloatArray(), 1e-6, "second moment");
        float[] outside = base.toFloatArray();
        for (int i : new int[] {0, 4, SIZE + 5, SIZE + 9}) {
            assertEquals(0f, outside[i], "memory beside the view is not written");
        }
    }

    @Test
    void updatesAParameterThatRecordsGradientsInsideACollector() {
        assumeTrue(FusedAdam.isBound(), "libtorch's entry point is not bound here");
        NDArray weight = manager.ones(new Shape(SIZE));
        weight.setRequiresGradient(true);
        NDArray grad = manager.ones(new Shape(SIZE));
        NDArray mean = manager.zeros(new Shape(SIZE));
        NDArray variance = manager.zeros(new Shape(SIZE));
        try (GradientCollector collector = manager.getEngine().newGradientCollector()) {
            assertTrue(Autograd.isGradMode());
            FusedAdam.of(weight, grad, mean, variance).update(1, 0.5, 0.9, 0.999, 0, 1e-8);
            assertTrue(Autograd.isGradMode(), "grad mode is restored");
        }
        // One step moves each weight by the learning rate, less what epsilon takes off.
        assertEquals(1 - 0.5 / (1 + 1e-8), weight.getFloat(0), 1e-7f);
    }

    @Test
    void updatesFloat64AndEmptyArrays() {
        assumeTrue(FusedAdam.isBound(), "libtorch's entry point is not bound here");
        NDArray weight = manager.ones(new Shape(SIZE), DataType.FLOAT64);
        NDArray grad = manager.ones(new Shape(SIZE), DataType.FLOAT64).neg();
        NDArray mean = manager.zeros(new Shape(SIZE), DataType.FLOAT64);
        NDArray variance = manager.zeros(new Shape(SIZE), DataType.FLOAT64);
        FusedAdam.of(weight, grad, mean, variance).update(1, 0.25, 0.9, 0.999, 0, 1e-8);
        assertEquals(1 + 0.25 / (1 + 1e-8), weight.toDoubleArray()[SIZE - 1], 1e-15);
        NDArray empty = manager.zeros(new Shape(0));
        FusedAdam.of(empty, empty.duplicate(), empty.duplicate(), empty.duplicate())
                .update(1, 0.25, 0.9, 0.999, 0.1, 1e-8);
        assertEquals(0, empty.size());
    }

    @Test
    void refusesArraysTheKernelWouldMisread() {
        assumeTrue(FusedAdam.isBound(), "libtorch's entry point is not bound here");
        NDArray a = manager.ones(new Shape(4, 6));
        NDArray b = manager.ones(new Shape(4, 6));
        NDArray c = manager.zeros(new Shape(4, 6));
        NDArray d = manager.zeros(new Shape(4, 6));
        assertNotNull(FusedAdam.of(a, b, c, d));
        NDArray transposed = manager.ones(new Shape(6, 4)).transpose();
        assertTrue(!TensorMemory.isContiguous(transposed));
        assertNull(FusedAdam.of(a, transposed, c, d), "a transposed gradient");
        assertNull(FusedAdam.of(a, b, c, manager.zeros(new Shape(5))), "another size");
        assertNull(FusedAdam.of(a, b.toType(DataType.FLOAT64, false), c, d), "mixed types");
        NDArray ints = manager.ones(new Shape(4, 6), DataType.INT32);
        assertNull(FusedAdam.of(ints, ints, ints, ints), "integers");
        FusedAdam fused = FusedAdam.of(a, b, c, d);
        assertThrows(
                IllegalArgumentException.class, () -> fused.update(0, 1e-3, 0.9, 0.999, 0, 1e-8));
        b.close();
        assertThrows(IllegalStateException.class, () -> fused.update(1, 1e-3, 0.9, 0.999, 0, 1e-8));
    }

    private static void assertClose(double[] expected, float[] actual, double bound, String what) {
        double difference = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            difference += Math.pow(actual[i] - expected[i], 2);
            norm += expected[i] * expected[i];
        }
        double error = Math.sqrt(difference / norm);
        assertTrue(error < bound, what + ": relative error " + error);
    }
}
