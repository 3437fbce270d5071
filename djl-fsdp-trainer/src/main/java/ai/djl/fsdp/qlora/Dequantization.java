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

    /** The values a byte takes. */
    private static final int BYTES = 256;

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
        // Both values of a byte in one lookup, in a table of every byte's pair of values: one
        // gather a byte instead of splitting the nibbles over the whole weight first.
        NDArray bytes = packed.getManager().arange(0, BYTES, 1, DataType.FLOAT32);
        NDArray pairs = code.get(Nibbles.unpack(bytes).toType(DataType.INT64, false));
        NDArray index = packed.reshape(-1).toType(DataType.INT64, false);
        NDArray decoded = pairs.reshape(BYTES, 2).get(index).reshape(-1);
        return decoded.get(new NDIndex("0:{}", count)).mul(scales(absmax, blockSize, count));
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
        NDArray decoded = map.get(codes.reshape(-1).toType(DataType.INT64, false));
        return decoded.mul(scales(absmax, blockSize, decoded.size()));
    }

    /** Each of {@code count} values' block scale. */
    private static NDArray scales(NDArray absmax, int blockSize, long count) {
        return absmax.repeat(0, blockSize).get(new NDIndex("0:{}", count));
    }
}
