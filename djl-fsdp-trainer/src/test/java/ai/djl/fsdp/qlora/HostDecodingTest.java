package ai.djl.fsdp.qlora;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The one-pass host decoding writes, bit for bit, what libtorch's operators decode to float32 and
 * then cast to each compute type: for counts that end inside a block and inside a byte, several
 * chunks, two block sizes, and scales that send float16 products into its subnormals and past its
 * largest value.
 */
class HostDecodingTest {

    static Stream<Arguments> cases() {
        Stream.Builder<Arguments> cases = Stream.builder();
        for (Precision precision : Precision.values()) {
            for (long count : new long[] {1000, 999, 1024, 3 * 16384 + 131}) {
                for (int block : new int[] {64, 256}) {
                    cases.add(Arguments.of(precision, count, block));
                }
            }
        }
        return cases.build();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void decodesAsLibtorchDecodesAndCasts(Precision precision, long count, int block) {
        Random random = new Random(count * block + precision.ordinal());
        byte[] bytes = new byte[(int) ((count + 1) / 2)];
        random.nextBytes(bytes);
        float[] code = new float[16];
        for (int i = 0; i < code.length; i++) {
            code[i] = random.nextFloat() * 2 - 1;
        }
        float[] scales = new float[(int) ((count + block - 1) / block)];
        for (int i = 0; i < scales.length; i++) {
            // From float16's subnormals (2^-24 and below) to past its largest value (65504).
            scales[i] = (float) Math.pow(2, random.nextInt(46) - 28) * (1 + random.nextFloat());
        }
        Shape shape = new Shape(count);
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray packed =
                    manager.create(
                            ByteBuffer.wrap(bytes), new Shape(bytes.length, 1), DataType.UINT8);
            NDArray decoded =
                    Dequantization.fourBit(
                            packed, manager.create(code), manager.create(scales), block, count);
            NDArray expected = precision.cast(decoded);

            NDArray actual =
                    HostDecoding.fourBit(packed, code, scales, block, shape, precision, manager);

            assertEquals(precision, Precision.ofArray(actual));
            assertEquals(shape, actual.getShape());
            assertArrayEquals(bytesOf(expected), bytesOf(actual));
        }
    }

    private static byte[] bytesOf(NDArray array) {
        ByteBuffer memory = TensorMemory.hostBuffer(array, "decoded weight");
        byte[] bytes = new byte[memory.remaining()];
        memory.get(bytes);
        return bytes;
    }
}
