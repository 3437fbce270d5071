package ai.djl.fsdp.qlora;

import ai.djl.fsdp.tensor.quant.Nibbles;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.function.UnaryOperator;

/**
 * bitsandbytes' decoding as tensor operations, on whatever device the codes are: each code's value
 * looked up in its map and multiplied by its block's scale, in float32, as bitsandbytes' kernels
 * compute it.
 *
 * <p>Every intermediate is closed as soon as it is used: the arrays are made in the manager of the
 * codes (the gathered unit's), which lives as long as the unit is gathered, so a layer's weights
 * would otherwise each leave several times their float32 size behind until then (on a 5120 x 13824
 * projection, 2.5 GB). A layer's forward decodes a chunk at a time, so that beside the weight in
 * the compute type it holds one chunk's float32 values.
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
        // Each byte's two values, in Nibbles' order, looked up at once in a 256 x 2 table.
        NDArray pairs;
        NDManager manager = code.getManager();
        try (NDArray byteValues = manager.arange(0, BYTES, 1, DataType.FLOAT32);
                NDArray nibbles = Nibbles.unpack(byteValues);
                NDArray nibbleIndex = nibbles.toType(DataType.INT64, false);
                NDArray values = code.get(nibbleIndex);
                NDArray table = values.reshape(BYTES, 2);
                NDArray flat = packed.reshape(-1);
                NDArray bytes = flat.toType(DataType.INT64, false)) {
            pairs = table.get(bytes);
        }
        try (NDArray values = pairs.reshape(-1);
                NDArray counted = values.get(new NDIndex("0:{}", count))) {
            return scaled(counted, absmax, blockSize);
        } finally {
            pairs.close();
        }
    }

    /**
     * Decodes {@code count} values as {@link #fourBit(NDArray, NDArray, NDArray, int, long)} does,
     * {@code chunk} values at a time (rounded down to whole blocks of whole bytes), each converted
     * before the next is decoded: the float32 values of one chunk at most exist at once.
     *
     * @param packed the bytes (uint8), any shape
     * @param code the 16 values by nibble (float32)
     * @param absmax one float32 scale a block
     * @param blockSize the values a scale covers
     * @param count the number of values
     * @param chunk the values decoded at a time
     * @param convert what each chunk's float32 values become (such as a cast); it may return them
     * @return the converted values, flat
     */
    static NDArray fourBit(
            NDArray packed,
            NDArray code,
            NDArray absmax,
            int blockSize,
            long count,
            long chunk,
            UnaryOperator<NDArray> convert) {
        long step = Math.max(chunk - chunk % (2L * blockSize), 2L * blockSize);
        NDList pieces = new NDList();
        try (NDArray bytes = packed.reshape(-1);
                NDArray scales = absmax.reshape(-1)) {
            for (long from = 0; from < count; from += step) {
                long to = Math.min(count, from + step);
                NDArray decoded;
                try (NDArray piece = bytes.get(new NDIndex("{}:{}", from / 2, (to + 1) / 2));
                        NDArray pieceScales =
                                scales.get(
                                        new NDIndex(
                                                "{}:{}",
                                                from / blockSize,
                                                (to + blockSize - 1) / blockSize))) {
                    decoded = fourBit(piece, code, pieceScales, blockSize, to - from);
                }
                NDArray converted = convert.apply(decoded);
                if (converted != decoded) {
                    decoded.close();
                }
                pieces.add(converted);
            }
            if (pieces.size() == 1) {
                return pieces.get(0);
            }
            return NDArrays.concat(pieces);
        } finally {
            if (pieces.size() > 1) {
                pieces.close();
            }
        }
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
        try (NDArray flat = codes.reshape(-1);
                NDArray index = flat.toType(DataType.INT64, false);
                NDArray decoded = map.get(index)) {
            return scaled(decoded, absmax, blockSize);
        }
    }

    /** Each decoded value times the scale of its block; the decoded values are left open. */
    private static NDArray scaled(NDArray decoded, NDArray absmax, int blockSize) {
        long count = decoded.size();
        long blocks = absmax.size();
        if (count == blocks * blockSize) {
            // Whole blocks: each row of values times its scale, without a scale per value.
            try (NDArray rows = decoded.reshape(blocks, blockSize);
                    NDArray column = absmax.reshape(blocks, 1);
                    NDArray product = rows.mul(column)) {
                return product.reshape(new Shape(count));
            }
        }
        try (NDArray repeated = absmax.repeat(0, blockSize);
                NDArray scales = repeated.get(new NDIndex("0:{}", count))) {
            return decoded.mul(scales);
        }
    }
}
