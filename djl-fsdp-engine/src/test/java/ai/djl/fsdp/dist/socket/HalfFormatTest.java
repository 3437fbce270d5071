package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.ShortBuffer;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Checks each {@link HalfFormat} bit for bit against libtorch's own conversions. */
class HalfFormatTest {

    private static final int PATTERNS = 1 << 16;

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @ParameterizedTest
    @EnumSource(HalfFormat.class)
    void everyPatternConvertsToTheFloatLibtorchGives(HalfFormat format) {
        NDArray halves = libtorchRounded(format, new float[PATTERNS]);
        ShortBuffer bits = TensorMemory.hostBuffer(halves, "patterns").asShortBuffer();
        for (int pattern = 0; pattern < PATTERNS; pattern++) {
            bits.put(pattern, (short) pattern);
        }
        NDArray floats = manager.zeros(new Shape(PATTERNS));
        TensorMemory.copy(halves, floats);
        float[] expected = floats.toFloatArray();
        for (int pattern = 0; pattern < PATTERNS; pattern++) {
            short half = (short) pattern;
            float actual = format.toFloat(half);
            assertEquals(
                    Float.floatToIntBits(expected[pattern]),
                    Float.floatToIntBits(actual),
                    () -> format + " bits " + Integer.toHexString(half & 0xFFFF));
            if (!Float.isNaN(actual)) {
                assertEquals(half, format.fromFloat(actual), "round trip");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(HalfFormat.class)
    void floatsRoundToTheBitsLibtorchGives(HalfFormat format) {
        Random random = new Random(7);
        float[] values = new float[200_000];
        for (int i = 0; i < values.length; i++) {
            // Random bit patterns cover subnormals, overflow, ties and NaN alike.
            values[i] = Float.intBitsToFloat(random.nextInt());
        }
        float[] edges = {
            65520f, // float16: the first value that rounds to infinity
            65519.996f,
            0x1p-25f, // float16: half the smallest subnormal, a tie that rounds to zero
            0x1.8p-24f, // float16: a tie between subnormals 1 and 2, rounds to even 2
            Float.intBitsToFloat(0x3F808000), // bfloat16: a tie that rounds down to even
            Float.intBitsToFloat(0x3F818000), // bfloat16: a tie that rounds up to even
            Float.MAX_VALUE, // bfloat16: rounds to infinity
        };
        System.arraycopy(edges, 0, values, 0, edges.length);
        ShortBuffer expected =
                TensorMemory.hostBuffer(libtorchRounded(format, values), "rounded").asShortBuffer();
        for (float value : values) {
            short libtorch = expected.get();
            short actual = format.fromFloat(value);
            if (Float.isNaN(value)) {
                assertTrue(Float.isNaN(format.toFloat(actual)), "NaN stays NaN");
            } else {
                assertEquals(libtorch, actual, () -> format + " of float " + value);
            }
        }
    }

    /** Returns {@code values} rounded to {@code format} by libtorch. */
    private NDArray libtorchRounded(HalfFormat format, float[] values) {
        NDArray exact = manager.create(values);
        // DJL cannot make bfloat16 arrays: the shim does.
        return format == HalfFormat.BFLOAT16
                ? TensorMemory.toBfloat16(exact)
                : exact.toType(DataType.FLOAT16, false);
    }
}
