package ai.djl.fsdp.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Arrays from {@link OwnedArrays} stay valid after their DJL handle is closed and the garbage
 * collector has run. With DJL's own {@code create} and {@code mul(Number)} in their place, both
 * tests read freed memory (NaN) on every run.
 */
class OwnedArraysTest {

    private static final int ELEMENTS = 256;

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
    void aViewOutlivesTheArrayItWasTakenFrom() throws InterruptedException {
        float[] values = new float[ELEMENTS];
        Arrays.fill(values, 1f);
        NDArray view;
        try (NDManager scope = manager.newSubManager()) {
            NDArray array = OwnedArrays.create(scope, values, new Shape(ELEMENTS));
            view = array.reshape(16, 16);
            view.attach(manager);
        }

        reclaimAndOverwriteFreedMemory(ELEMENTS * Float.BYTES);

        assertArrayEquals(values, view.toFloatArray());
    }

    @Test
    void aScalarSavedForBackwardOutlivesItsHandle() throws InterruptedException {
        NDArray x = manager.ones(new Shape(4));
        x.setRequiresGradient(true);
        try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
            NDArray y;
            try (NDArray half = OwnedArrays.scalar(x, 0.5f)) {
                y = x.mul(half).sum();
            }
            reclaimAndOverwriteFreedMemory(Float.BYTES);
            collector.backward(y);
        }

        assertArrayEquals(new float[] {0.5f, 0.5f, 0.5f, 0.5f}, x.getGradient().toFloatArray());
    }

    @Test
    void aScalarKeepsTheTypeOfTheArrayItScales() {
        NDArray x = manager.ones(new Shape(3), DataType.FLOAT64);

        NDArray y = x.mul(OwnedArrays.scalar(x, 2f));

        assertEquals(DataType.FLOAT64, y.getDataType());
        assertArrayEquals(new double[] {2, 2, 2}, y.toDoubleArray());
    }

    @Test
    void int64DataKeepsItsValues() {
        long[] ids = {15496, 995, -1, Long.MAX_VALUE};

        NDArray array = OwnedArrays.create(manager, ids, new Shape(2, 2));

        assertEquals(DataType.INT64, array.getDataType());
        assertArrayEquals(ids, array.toLongArray());
    }

    /**
     * Frees the memory of unreachable direct buffers (DJL's borrowed array memory among them), then
     * allocates buffers of the same size full of NaN, so that memory freed and handed out again
     * reads as NaN through any tensor still pointing at it.
     */
    private static void reclaimAndOverwriteFreedMemory(int bytes) throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            System.gc();
            // Direct memory is freed by the Cleaner thread after the collection.
            Thread.sleep(20);
            for (int i = 0; i < 1000; i++) {
                ByteBuffer garbage =
                        ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
                while (garbage.remaining() >= Float.BYTES) {
                    garbage.putFloat(Float.NaN);
                }
            }
        }
    }
}
