package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

/** Checks {@link Float16} bit for bit against libtorch's own conversions. */
class Float16Test {

    @Test
    void everyHalfConvertsToTheFloatLibtorchGives() {
        ByteBuffer halves = ByteBuffer.allocate(2 << 16).order(ByteOrder.nativeOrder());
        for (int bits = 0; bits < 1 << 16; bits++) {
            halves.putShort((short) bits);
        }
        halves.flip();
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray all = manager.create(halves, new Shape(1 << 16), DataType.FLOAT16);
            float[] expected = all.toType(DataType.FLOAT32, false).toFloatArray();
            for (int bits = 0; bits < 1 << 16; bits++) {
                short half = (short) bits;
                float actual = Float16.toFloat(half);
                assertEquals(Float.floatToIntBits(expected[bits]), Float.floatToIntBits(actual),
                        () -> "half bits " + Integer.toHexString(half & 0xFFFF));
                if (!Float.isNaN(actual)) {
                    assertEquals(half, Float16.fromFloat(actual), "round trip");
                }
            }
        }
    }

    @Test
    void floatsRoundToTheHalfLibtorchGives() {
        Random random = new Random(7);
        float[] values = new float[200_000];
        for (int i = 0; i < values.length; i++) {
            // Random bit patterns cover subnormals, overflow, ties and NaN alike.
            values[i] = Float.intBitsToFloat(random.nextInt());
        }
        values[0] = 65520f; // the first value that rounds to infinity
        values[1] = 65519.996f;
        values[2] = 0x1p-25f; // half the smallest subnormal: a tie that rounds to zero
        values[3] = 0x1.8p-24f; // a tie between subnormals 1 and 2: rounds to even 2
        try (NDManager manager = NDManager.newBaseManager()) {
            ByteBuffer halves = manager.create(values).toType(DataType.FLOAT16, false)
                    .toByteBuffer().order(ByteOrder.nativeOrder());
            for (float value : values) {
                short expected = halves.getShort();
                short actual = Float16.fromFloat(value);
                if (Float.isNaN(value)) {
                    assertTrue(Float.isNaN(Float16.toFloat(actual)), "NaN stays NaN");
                } else {
                    assertEquals(expected, actual, () -> "float " + value);
                }
            }
        }
    }
}
