package ai.djl.fsdp.qlora;

import ai.djl.fsdp.tensor.quant.Nibbles;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;

/**
 * bitsandbytes' decoding as tensor operations, on whatever device the codes are: each code's value
 * looked up in its map and multiplied by its block's scale, in float32, as bitsandbytes' kernels
 * compute it.
 */
final class Dequantization {

    private Dequantization() {}

    /**
     * Decodes {@code count} values from 4-bit codes packed two a byte, the earlier in the high
     * nibble.
     *
     * @param packed the bytes (uint8), any shape
     * @param code the 16 values by nibble (float32)
     * @param absmax one float32 scale a block
     * @param blockSize the values a scale covers
     * @param count the number of values
     * @return the values, float32, flat
     */
    static NDArray fourBit(
            NDArray packed, NDArray code, NDArray absmax, int blockSize, long count) {
        NDArray nibbles = Nibbles.unpack(packed.toType(DataType.FLOAT32, false));
        return scaled(code, nibbles.get(new NDIndex("0:{}", count)), absmax, blockSize);
    }

    /**
     * Decodes one value per 8-bit code.
     *
     * @param codes the codes (uint8), flat
     * @param map the 256 values by code (float32)
     * @param absmax one float32 scale a block
     * @param blockSize the values a scale covers
     * @return the values, float32, flat
     */
    static NDArray eightBit(NDArray codes, NDArray map, NDArray absmax, int blockSize) {
        return scaled(map, codes.reshape(-1).toType(DataType.FLOAT32, false), absmax, blockSize);
    }

    /** Each code's value times the scale of its block. */
    private static NDArray scaled(NDArray values, NDArray codes, NDArray absmax, int blockSize) {
        long count = codes.size();
        NDArray decoded = values.get(codes.toType(DataType.INT64, false));
        NDArray scales = absmax.repeat(0, blockSize).get(new NDIndex("0:{}", count));
        return decoded.mul(scales);
    }
}
