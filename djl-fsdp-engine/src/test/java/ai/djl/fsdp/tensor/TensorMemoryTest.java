package ai.djl.fsdp.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** CPU checks of the shim calls; the CUDA stream is exercised by the NCCL tests on GPUs. */
class TensorMemoryTest {

    /** bfloat16 keeps 8 significant bits: rounding to nearest errs by at most 2^-8 relative. */
    private static final float BF16_ROUNDING = 1f / 256;

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(7);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void dataPointerIsTheDirectBuffersAddress() {
        NDArray array = manager.arange(0f, 64f, 1f);
        ByteBuffer buffer = array.toByteBuffer(true);

        assertEquals(
                Pointer.nativeValue(Native.getDirectBufferPointer(buffer)),
                TensorMemory.dataPointer(array));
        // A view starts further into the same memory.
        NDArray tail = array.get("16:");
        assertEquals(
                TensorMemory.dataPointer(array) + 16 * Float.BYTES, TensorMemory.dataPointer(tail));
    }

    @Test
    void hostBufferIsTheArraysOwnMemory() {
        NDArray array = manager.arange(0f, 8f, 1f);

        ByteBuffer memory = TensorMemory.hostBuffer(array, "array");
        memory.putFloat(3 * Float.BYTES, -1f);

        assertEquals(8 * Float.BYTES, memory.capacity());
        assertEquals(
                TensorMemory.dataPointer(array),
                Pointer.nativeValue(Native.getDirectBufferPointer(memory)));
        assertEquals(-1f, array.getFloat(3));
    }

    @Test
    void hostBuffersAreConsecutivePiecesOfTheArraysMemory() {
        NDArray array = manager.arange(0f, 10f, 1f);

        List<ByteBuffer> pieces = TensorMemory.hostBuffers(array, "broadcast array", 16);
        pieces.get(2).putFloat(Float.BYTES, -1f);

        assertEquals(List.of(16, 16, 8), pieces.stream().map(ByteBuffer::capacity).toList());
        for (int i = 0; i < pieces.size(); i++) {
            assertEquals(
                    TensorMemory.dataPointer(array) + 16L * i,
                    Pointer.nativeValue(Native.getDirectBufferPointer(pieces.get(i))));
        }
        assertEquals(-1f, array.getFloat(9), "written through the last piece");
        assertEquals(
                List.of(0),
                TensorMemory.hostBuffers(manager.create(new float[0]), "empty", 16).stream()
                        .map(ByteBuffer::capacity)
                        .toList());
    }

    @Test
    void hostBufferRefusesMoreThanOneBufferHolds() {
        // Never written, so its pages are not touched: it costs address space, not memory.
        NDArray large = manager.create(new Shape(Integer.MAX_VALUE + 8L), DataType.INT8);

        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TensorMemory.hostBuffer(large, "broadcast array"));
        assertTrue(error.getMessage().contains("broadcast array"), error.getMessage());
        assertTrue(error.getMessage().contains("2147483655 bytes"), error.getMessage());
        assertEquals(
                2, TensorMemory.hostBuffers(large, "broadcast array", Integer.MAX_VALUE).size());
    }

    @Test
    void contiguityFollowsTheStrides() {
        NDArray matrix = manager.arange(0f, 12f, 1f).reshape(3, 4);

        assertTrue(TensorMemory.isContiguous(matrix));
        assertTrue(TensorMemory.isContiguous(matrix.get("1:")), "a run of whole rows");
        assertTrue(TensorMemory.isContiguous(matrix.get("1:2, :")), "one row");
        assertFalse(TensorMemory.isContiguous(matrix.transpose()));
        assertFalse(TensorMemory.isContiguous(matrix.get(":, 1:3")));
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> TensorMemory.hostBuffer(matrix.transpose(), "allGather input"));
        assertTrue(error.getMessage().contains("allGather input"), error.getMessage());
        assertTrue(error.getMessage().contains("not contiguous"), error.getMessage());
    }

    @Test
    void dataTypeNamesBfloat16() {
        NDArray source = manager.ones(new Shape(4));
        NDArray bf16 = TensorMemory.toBfloat16(source);

        assertEquals(DataType.UNKNOWN, bf16.getDataType(), "DJL's own answer");
        assertEquals(DataType.BFLOAT16, TensorMemory.dataType(bf16));
        assertEquals(DataType.FLOAT32, TensorMemory.dataType(source));
        assertEquals(4 * 2, TensorMemory.hostBuffer(bf16, "array").capacity());
    }

    @Test
    void bfloat16RoundTripKeepsBfloat16Precision() {
        NDArray source = manager.randomNormal(0f, 3f, new Shape(32, 16), DataType.FLOAT32);

        NDArray bf16 = TensorMemory.toBfloat16(source);
        NDArray back = bf16.toType(DataType.FLOAT32, false);

        assertTrue(TensorMemory.isBfloat16(bf16));
        assertFalse(TensorMemory.isBfloat16(source));
        assertEquals(source.getShape(), bf16.getShape());
        float[] expected = source.toFloatArray();
        float[] actual = back.toFloatArray();
        for (int i = 0; i < expected.length; i++) {
            assertEquals(
                    expected[i], actual[i], Math.abs(expected[i]) * BF16_ROUNDING, "element " + i);
        }
    }

    @Test
    void valuesWithFewSignificantBitsSurviveExactly() {
        float[] exact = {1.5f, -2f, 0.15625f, 384f, -0.0078125f};
        NDArray bf16 = TensorMemory.toBfloat16(manager.create(exact));
        NDArray back = manager.zeros(new Shape(exact.length), DataType.FLOAT32);

        TensorMemory.copy(bf16, back);

        assertArrayEquals(exact, back.toFloatArray());
    }

    @Test
    void matMulRunsOnBfloat16() {
        NDArray a = manager.randomUniform(-1f, 1f, new Shape(8, 32), DataType.FLOAT32);
        NDArray b = manager.randomUniform(-1f, 1f, new Shape(32, 4), DataType.FLOAT32);

        NDArray product = TensorMemory.toBfloat16(a).matMul(TensorMemory.toBfloat16(b));

        assertTrue(TensorMemory.isBfloat16(product));
        float[] expected = a.matMul(b).toFloatArray();
        float[] actual = product.toType(DataType.FLOAT32, false).toFloatArray();
        // Both inputs and the output are rounded once each (the sum is accumulated in float32),
        // so each element errs by at most three roundings of sum_k |a_ik| |b_kj|.
        float[] magnitude = a.abs().matMul(b.abs()).toFloatArray();
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], actual[i], 3 * BF16_ROUNDING * magnitude[i], "element " + i);
        }
    }

    @Test
    void emptyBfloat16IsOwnedByTheManager() {
        NDArray empty;
        try (NDManager scope = manager.newSubManager()) {
            empty = TensorMemory.emptyBfloat16(scope, new Shape(3, 5));
            assertEquals(new Shape(3, 5), empty.getShape());
            assertTrue(TensorMemory.isBfloat16(empty));
        }
        assertTrue(empty.isReleased());
    }

    @Test
    void cudaStreamNeedsAGpu() {
        assertThrows(
                IllegalArgumentException.class, () -> TensorMemory.currentCudaStream(Device.cpu()));
    }
}
