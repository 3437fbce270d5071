package ai.djl.fsdp.quant;

/**
 * The blockwise kernels, over a run of whole blocks of a flattened tensor (a whole weight, or the
 * blocks of one rank's shard): each block's scale is its largest magnitude, every value is
 * multiplied by the scale's float32 reciprocal and coded, and decoding multiplies a code's value by
 * the scale. A last block may be partial. In 4 bits two codes share a byte, the earlier value in
 * the high nibble; an odd count's last byte codes a zero in its low nibble, as bitsandbytes pads.
 */
public final class BlockQuantizer {

    private BlockQuantizer() {}

    /**
     * Returns the number of blocks {@code count} values fill.
     *
     * @param count the number of values
     * @param blockSize the block size
     * @return the number of blocks, the last maybe partial
     */
    public static int blocks(long count, int blockSize) {
        return Math.toIntExact((count + blockSize - 1) / blockSize);
    }

    /**
     * Quantizes {@code count} values to 4-bit codes, {@code (count + 1) / 2} bytes.
     *
     * @param type the code
     * @param blockSize the block size, even
     * @param values the values, from {@code from}
     * @param from the first value's index
     * @param count the number of values
     * @param packed receives the codes, from {@code packedFrom}
     * @param packedFrom the first byte's index
     * @param absmax receives each block's scale, from {@code absmaxFrom}
     * @param absmaxFrom the first block's index
     * @throws IllegalArgumentException if a value is not finite
     */
    public static void quantize4(
            QuantType type,
            int blockSize,
            float[] values,
            int from,
            int count,
            byte[] packed,
            int packedFrom,
            float[] absmax,
            int absmaxFrom) {
        checkEven(blockSize);
        for (int block = 0; block * blockSize < count; block++) {
            int start = from + block * blockSize;
            int end = start + Math.min(blockSize, count - block * blockSize);
            float scale = largestMagnitude(values, start, end);
            absmax[absmaxFrom + block] = scale;
            float reciprocal = 1f / scale;
            for (int i = start; i < end; i += 2) {
                float second = i + 1 < end ? values[i + 1] : 0f;
                int high = type.encode(values[i] * reciprocal);
                int low = type.encode(second * reciprocal);
                packed[packedFrom + (i - from) / 2] = (byte) (high << 4 | low);
            }
        }
    }

    /**
     * Decodes {@code count} values from 4-bit codes.
     *
     * @param type the code
     * @param blockSize the block size, even
     * @param packed the codes, from {@code packedFrom}
     * @param packedFrom the first byte's index
     * @param absmax each block's scale, from {@code absmaxFrom}
     * @param absmaxFrom the first block's index
     * @param out receives the values, from {@code outFrom}
     * @param outFrom the first value's index
     * @param count the number of values
     */
    public static void dequantize4(
            QuantType type,
            int blockSize,
            byte[] packed,
            int packedFrom,
            float[] absmax,
            int absmaxFrom,
            float[] out,
            int outFrom,
            int count) {
        checkEven(blockSize);
        for (int i = 0; i < count; i++) {
            int bits = packed[packedFrom + i / 2];
            int nibble = (i & 1) == 0 ? (bits >> 4) & 0xF : bits & 0xF;
            out[outFrom + i] = type.decode(nibble) * absmax[absmaxFrom + i / blockSize];
        }
    }

    /**
     * Quantizes values to 8-bit codes over a sorted map of 256 values.
     *
     * @param map the map, such as {@link DynamicMap#signed()}
     * @param blockSize the block size
     * @param values the values
     * @param codes receives one code a value
     * @param absmax receives each block's scale
     * @throws IllegalArgumentException if a value is not finite
     */
    public static void quantize8(
            float[] map, int blockSize, float[] values, byte[] codes, float[] absmax) {
        for (int block = 0; block * blockSize < values.length; block++) {
            int start = block * blockSize;
            int end = Math.min(start + blockSize, values.length);
            float scale = largestMagnitude(values, start, end);
            absmax[block] = scale;
            float reciprocal = 1f / scale;
            for (int i = start; i < end; i++) {
                codes[i] = (byte) DynamicMap.encode(map, values[i] * reciprocal);
            }
        }
    }

    /**
     * Decodes values from 8-bit codes.
     *
     * @param map the map the codes index
     * @param blockSize the block size
     * @param codes the codes
     * @param absmax each block's scale
     * @return the values, one a code
     */
    public static float[] dequantize8(float[] map, int blockSize, byte[] codes, float[] absmax) {
        float[] out = new float[codes.length];
        for (int i = 0; i < codes.length; i++) {
            out[i] = map[codes[i] & 0xFF] * absmax[i / blockSize];
        }
        return out;
    }

    private static float largestMagnitude(float[] values, int start, int end) {
        float largest = 0f;
        for (int i = start; i < end; i++) {
            float value = values[i];
            if (!Float.isFinite(value)) {
                throw new IllegalArgumentException(
                        "cannot quantize a value that is not finite: "
                                + value
                                + " at element "
                                + i);
            }
            largest = Math.max(largest, Math.abs(value));
        }
        return largest;
    }

    private static void checkEven(int blockSize) {
        if (blockSize <= 0 || blockSize % 2 != 0) {
            throw new IllegalArgumentException(
                    "a 4-bit block size must be even and positive, not " + blockSize);
        }
    }
}
