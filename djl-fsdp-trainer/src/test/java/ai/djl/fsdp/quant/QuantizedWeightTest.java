package ai.djl.fsdp.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A weight quantized from a buffer outside the heap (as from a tensor's own memory), a chunk of
 * whole blocks at a time, holds the codes and scales quantizing all its values at once gives: for
 * both codes, plain and nested scales, small and large blocks (the last one partial), and an odd
 * count whose last byte holds one value.
 */
class QuantizedWeightTest {

    @Test
    void chunkedFromADirectBufferAsWhole() {
        int count = QuantizedWeight.CHUNK + 3 * 64 + 5;
        float[] values = new float[count];
        Random random = new Random(5);
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian() * 0.02f;
        }
        FloatBuffer direct =
                ByteBuffer.allocateDirect(4 * count).order(ByteOrder.nativeOrder()).asFloatBuffer();
        direct.put(values).flip();
        // NF4 in small blocks with plain scales; FP4 in large blocks (the last one partial),
        // nested.
        QuantConfig[] configs = {
            QuantConfig.builder().setQuantType(QuantType.NF4).build(),
            QuantConfig.builder()
                    .setQuantType(QuantType.FP4)
                    .optBlockSize(4096)
                    .optNested(true)
                    .build()
        };
        for (QuantConfig config : configs) {
            int blockSize = config.getBlockSize();
            String what = config.getQuantType().getName() + " blocks of " + blockSize;
            byte[] packed = new byte[(count + 1) / 2];
            float[] absmax = new float[BlockQuantizer.blocks(count, blockSize)];
            BlockQuantizer.quantize4(
                    config.getQuantType(), blockSize, values, 0, count, packed, 0, absmax, 0);
            QuantizedWeight chunked = QuantizedWeight.quantize(direct, new long[] {count}, config);
            assertEquals(0, direct.position(), "the buffer's position is kept");
            assertArrayEquals(packed, chunked.getPacked(), what);
            float[] scales =
                    config.isNested() ? NestedScales.quantize(absmax).dequantize() : absmax;
            assertArrayEquals(scales, chunked.getAbsmax(), what);
        }
    }
}
