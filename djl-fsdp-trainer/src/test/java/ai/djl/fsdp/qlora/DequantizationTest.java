package ai.djl.fsdp.qlora;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Decoding a chunk at a time gives the whole decoding's values exactly, each chunk converted: for
 * counts that end inside a block and inside a byte, and chunks that are not whole blocks.
 */
class DequantizationTest {

    private static final int BLOCK = 64;

    @ParameterizedTest
    @ValueSource(longs = {1000, 999, 1024})
    void chunksDecodeAsTheWhole(long count) {
        Random random = new Random(count);
        byte[] bytes = new byte[(int) ((count + 1) / 2)];
        random.nextBytes(bytes);
        float[] code = new float[16];
        for (int i = 0; i < code.length; i++) {
            code[i] = random.nextFloat() * 2 - 1;
        }
        float[] scales = new float[(int) ((count + BLOCK - 1) / BLOCK)];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = random.nextFloat() + 0.5f;
        }
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray packed =
                    manager.create(
                            ByteBuffer.wrap(bytes), new Shape(bytes.length, 1), DataType.UINT8);
            NDArray map = manager.create(code);
            NDArray absmax = manager.create(scales);
            float[] whole =
                    Dequantization.fourBit(packed, map, absmax, BLOCK, count).toFloatArray();
            UnaryOperator<NDArray> doubled = values -> values.mul(2);

            for (long chunk : new long[] {128, 200, 4 * BLOCK, count + 1}) {
                float[] chunked =
                        Dequantization.fourBit(packed, map, absmax, BLOCK, count, chunk, doubled)
                                .toFloatArray();
                float[] expected = new float[whole.length];
                for (int i = 0; i < whole.length; i++) {
                    expected[i] = whole[i] * 2;
                }
                assertArrayEquals(expected, chunked, "chunks of " + chunk);
            }
            assertArrayEquals(
                    whole,
                    Dequantization.fourBit(
                                    packed,
                                    map,
                                    absmax,
                                    BLOCK,
                                    count,
                                    128,
                                    UnaryOperator.identity())
                            .toFloatArray(),
                    "unconverted");
        }
    }
}
