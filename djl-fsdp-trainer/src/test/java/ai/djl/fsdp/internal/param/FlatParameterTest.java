package ai.djl.fsdp.internal.param;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.nio.FloatBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

class FlatParameterTest {

    private static Parameter parameter(NDManager manager, String name, Shape shape, float first) {
        Parameter parameter =
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(shape)
                        .optInitializer(Initializer.ZEROS)
                        .build();
        parameter.initialize(manager, DataType.FLOAT32);
        NDArray values = manager.arange(first, first + shape.size()).reshape(shape);
        parameter.getArray().set(values.toByteBuffer());
        return parameter;
    }

    @Test
    void shardsArePaddedPiecesOfTheParametersEndToEnd() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Parameter a = parameter(manager, "a", new Shape(2, 2), 0);
            Parameter b = parameter(manager, "b", new Shape(3), 4);
            // 7 elements over 3 ranks: padded to 9, shards of 3; rank 2 holds [6, pad, pad].
            FlatParameter last =
                    new ShardLoader(3, 2, manager, null, null).load("u", true, List.of(a, b));
            assertEquals(7, last.getLayout().getNumel());
            assertEquals(9, last.getLayout().getPaddedNumel());
            assertArrayEquals(new float[] {6, 0, 0}, last.getShard().toFloatArray());
            FlatParameter first =
                    new ShardLoader(3, 0, manager, null, null).load("u", true, List.of(a, b));
            assertArrayEquals(new float[] {0, 1, 2}, first.getShard().toFloatArray());
        }
    }

    @Test
    void aSingleParameterWithoutPaddingIsItsOwnFlatBuffer() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Parameter a = parameter(manager, "a", new Shape(2, 2), 10);
            FlatParameter flat =
                    new ShardLoader(1, 0, manager, null, null).load("u", false, List.of(a));
            List<NDArray> views = flat.getLayout().viewsOf(flat.getFull());
            assertEquals(new Shape(2, 2), views.get(0).getShape());
            assertArrayEquals(new float[] {10, 11, 12, 13}, views.get(0).toFloatArray());
        }
    }

    @Test
    void aReleasableFullBufferGivesItsPagesBackAndKeepsItsAddress() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Parameter a = parameter(manager, "a", new Shape(64, 64), 0);
            FlatParameter flat =
                    new ShardLoader(2, 0, manager, null, null).load("u", true, List.of(a));
            NDArray full = flat.allocateFull(Precision.FLOAT32, true);
            assertTrue(flat.isFullReleasable());
            long address = TensorMemory.dataPointer(full);
            // What an all-gather does: write the memory itself.
            FloatBuffer memory = TensorMemory.hostBuffer(full, "test").asFloatBuffer();
            while (memory.hasRemaining()) {
                memory.put(7f);
            }
            assertEquals(64 * 64 * Float.BYTES, flat.getFullResidentBytes());

            flat.releaseFull();

            assertEquals(0, flat.getFullResidentBytes());
            assertEquals(0f, full.getFloat(0), "released pages read as zeros");
            assertSame(
                    full,
                    flat.allocateFull(Precision.FLOAT32, true),
                    "a gather refills the same buffer");
            assertEquals(address, TensorMemory.dataPointer(flat.getFull()));
            flat.freeFull();
            assertFalse(flat.hasFull());
            assertFalse(flat.isFullReleasable());
            assertThrows(IllegalStateException.class, flat::releaseFull);
            flat.close();
        }
    }

    @Test
    void aZeroedGradientIsReplacedByTheNextStepsFirstAndReadsAsZerosWithoutOne() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Parameter a = parameter(manager, "a", new Shape(3), 0);
            FlatParameter flat =
                    new ShardLoader(1, 0, manager, null, null).load("u", true, List.of(a));
            flat.accumulateGradient(manager.create(new float[] {1, Float.NaN, 3}), 1f);
            flat.accumulateGradient(manager.create(new float[] {1, 1, 1}), 2f);
            assertArrayEquals(new float[] {3, Float.NaN, 5}, flat.getGradient().toFloatArray());

            flat.zeroGradient();
            flat.accumulateGradient(manager.create(new float[] {4, 5, 6}), 0.5f);
            flat.accumulateGradient(manager.create(new float[] {1, 1, 1}), 1f);
            assertArrayEquals(
                    new float[] {3, 3.5f, 4},
                    flat.getGradient().toFloatArray(),
                    "the step's first gradient replaces the last step's, NaN included");

            NDArray memory = flat.getGradient();
            flat.zeroGradient();
            assertArrayEquals(new float[] {0, 0, 0}, flat.getGradient().toFloatArray());
            assertSame(memory, flat.getGradient(), "the gradient keeps its memory");
            flat.close();
        }
    }

    @Test
    void theStepsFirstGradientIsTakenAsTheAccumulatorAndOutlivesTheScopeItCameIn() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            Parameter a = parameter(manager, "a", new Shape(3), 0);
            FlatParameter flat =
                    new ShardLoader(1, 0, manager, null, null).load("u", true, List.of(a));
            NDArray reduced;
            try (NDManager reduction = manager.newSubManager()) {
                reduced = reduction.create(new float[] {1, 2, 3});
                flat.accumulateGradient(reduced, 2f);
            }
            assertSame(reduced, flat.getGradient(), "taken, not copied");
            assertArrayEquals(
                    new float[] {2, 4, 6},
                    flat.getGradient().toFloatArray(),
                    "still open after the reduction's scope closed");
            // The next micro-batch's gradient is added into the taken array.
            flat.accumulateGradient(manager.create(new float[] {1, 1, 1}), 1f);
            assertSame(reduced, flat.getGradient());
            assertArrayEquals(new float[] {3, 5, 7}, flat.getGradient().toFloatArray());

            flat.zeroGradient();
            try (NDManager reduction = manager.newSubManager()) {
                // Every other element: a view that is not contiguous is copied, not taken.
                NDArray strided =
                        reduction.create(new float[] {7, 0, 8, 0, 9, 0}).reshape(3, 2).get(":, 0");
                flat.accumulateGradient(strided, 1f);
                assertNotSame(strided, flat.getGradient());
            }
            assertSame(reduced, flat.getGradient(), "copied into the memory it had");
            assertArrayEquals(new float[] {7, 8, 9}, flat.getGradient().toFloatArray());
            flat.close();
        }
    }
}
