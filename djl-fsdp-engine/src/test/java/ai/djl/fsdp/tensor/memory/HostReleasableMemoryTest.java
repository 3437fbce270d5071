package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.engine.EngineException;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.GradientCollector;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A unit's gathered parameters released after forward and gathered again before backward: the graph
 * built over the memory gives the same gradients, bit for bit, as without the release.
 */
class HostReleasableMemoryTest {

    private static final int IN = 256;
    private static final int OUT = 512;

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(5);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void releasedAndRefilledParametersGiveTheSameGradients() {
        NDArray x = manager.randomNormal(new Shape(8, IN));
        float[] weights = manager.randomNormal(new Shape(IN * OUT)).toFloatArray();
        try (HostReleasableMemory memory =
                HostReleasableMemory.map((long) IN * OUT * Float.BYTES)) {
            float[][] reference = gradients(memory, x, weights, false, false);
            float[][] released = gradients(memory, x, weights, true, true);
            assertArrayEquals(reference[0], released[0], "input gradient");
            assertArrayEquals(reference[1], released[1], "parameter gradient");
            // Control: backward without the refill reads the zeroed pages, so the graph really
            // reads this memory in backward.
            float[][] notRefilled = gradients(memory, x, weights, true, false);
            assertEquals(0f, sumOfAbs(notRefilled[0]), "the input gradient is W-times-gradient");
        }
    }

    @Test
    void releaseGivesThePagesBackToTheSystem() throws Exception {
        long bytes = 64L << 20;
        try (HostReleasableMemory memory = HostReleasableMemory.map(bytes);
                NDManager scope = manager.newSubManager()) {
            NDArray flat = memory.wrap(scope, new Shape(bytes / 4), Precision.FLOAT32, 0);
            TensorMemory.copy(scope.ones(new Shape()), flat);
            assertEquals(bytes, memory.getResidentBytes());
            long before = rssAnon();

            memory.release();

            assertEquals(0, memory.getResidentBytes());
            long dropped = before - rssAnon();
            assertTrue(dropped > bytes * 9 / 10, "the resident set fell by " + dropped + " bytes");
            assertEquals(0f, flat.sum().getFloat(), "released pages read as zeros");
            memory.getBuffer().asFloatBuffer().put(0, 3f);
            assertEquals(3f, flat.getFloat(0));
        }
    }

    @Test
    void refillWithAnInPlaceOperatorIsCaughtByAutograd() {
        NDArray x = manager.randomNormal(new Shape(8, IN));
        try (HostReleasableMemory memory = HostReleasableMemory.map((long) IN * OUT * Float.BYTES);
                NDManager scope = manager.newSubManager()) {
            NDArray w = memory.wrap(scope, new Shape(IN, OUT), Precision.FLOAT32, 0);
            w.setRequiresGradient(true);
            NDArray input = x.duplicate();
            input.setRequiresGradient(true);
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray y = input.matMul(w).tanh().sum();
                JniUtils.setGradMode(false);
                try {
                    TensorMemory.copy(scope.ones(new Shape()), w);
                } finally {
                    JniUtils.setGradMode(true);
                }
                EngineException error =
                        assertThrows(EngineException.class, () -> collector.backward(y));
                assertTrue(error.getMessage().contains("inplace"), error.getMessage());
            }
        }
    }

    @Test
    void wrapChecksTheFit() {
        try (HostReleasableMemory memory = HostReleasableMemory.map(1000)) {
            IllegalArgumentException error =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> memory.wrap(manager, new Shape(10, 30), Precision.FLOAT32, 0));
            assertTrue(error.getMessage().contains("does not fit"), error.getMessage());
            NDArray tail = memory.wrap(manager, new Shape(100), Precision.BFLOAT16, 800);
            assertEquals(memory.getAddress() + 800, TensorMemory.dataPointer(tail));
        }
    }

    /** Optionally releases the memory after forward and writes the weights back before backward. */
    private float[][] gradients(
            HostReleasableMemory memory,
            NDArray x,
            float[] weights,
            boolean release,
            boolean refill) {
        Runnable fill = () -> memory.getBuffer().asFloatBuffer().put(weights);
        return ReleasedGraphs.gradients(
                manager,
                memory,
                x,
                OUT,
                fill,
                () -> {
                    if (release) {
                        memory.release();
                        assertEquals(0, memory.getResidentBytes());
                    }
                    if (refill) {
                        fill.run();
                    }
                });
    }

    private static float sumOfAbs(float[] values) {
        float sum = 0;
        for (float value : values) {
            sum += Math.abs(value);
        }
        return sum;
    }

    private static long rssAnon() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("RssAnon:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("/proc/self/status has no RssAnon");
    }
}
