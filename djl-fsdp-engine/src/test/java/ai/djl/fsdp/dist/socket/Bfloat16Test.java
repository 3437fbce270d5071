package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import org.junit.jupiter.api.Test;

import java.nio.ShortBuffer;
import java.util.Random;

/** Checks {@link Bfloat16} bit for bit against libtorch's own conversions. */
class Bfloat16Test {

    @Test
    void everyBfloat16ConvertsToTheFloatLibtorchGives() {
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray all = TensorMemory.emptyBfloat16(manager, new Shape(1 << 16));
            for (int bits = 0; bits < 1 << 16; bits++) {
                TensorMemory.hostBuffer(all, "bits").putShort(bits * Short.BYTES, (short) bits);
            }
            NDArray floats = manager.zeros(new Shape(1 << 16));
            TensorMemory.copy(all, floats);
            float[] expected = floats.toFloatArray();
            for (int bits = 0; bits < 1 << 16; bits++) {
                short half = (short) bits;
                float actual = Bfloat16.toFloat(half);
                assertEquals(Float.floatToIntBits(expected[bits]), Float.floatToIntBits(actual),
                        () -> "bfloat16 bits " + Integer.toHexString(half & 0xFFFF));
                if (!Float.isNaN(actual)) {
                    assertEquals(half, Bfloat16.fromFloat(actual), "round trip");
                }
            }
        }
    }

    @Test
    void floatsRoundToTheBfloat16LibtorchGives() {
        Random random = new Random(7);
        float[] values = new float[200_000];
        for (int i = 0; i < values.length; i++) {
            // Random bit patterns cover subnormals, overflow, ties and NaN alike.
            values[i] = Float.intBitsToFloat(random.nextInt());
        }
        values[0] = Float.intBitsToFloat(0x3F808000); // a tie that rounds down to even
        values[1] = Float.intBitsToFloat(0x3F818000); // a tie that rounds up to even
        values[2] = Float.intBitsToFloat(0x7F7FFFFF); // the largest float: rounds to infinity
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray rounded = TensorMemory.toBfloat16(manager.create(values));
            ShortBuffer expected =
                    TensorMemory.hostBuffer(rounded, "rounded").asShortBuffer();
            for (float value : values) {
                short libtorch = expected.get();
                short actual = Bfloat16.fromFloat(value);
                if (Float.isNaN(value)) {
                    assertTrue(Float.isNaN(Bfloat16.toFloat(actual)), "NaN stays NaN");
                } else {
                    assertEquals(libtorch, actual, () -> "float " + value);
                }
            }
        }
    }
}
