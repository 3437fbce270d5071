package ai.djl.fsdp.tensor.quant;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * Symmetric absmax quantization of rows of float values, block by block: each block of {@link
 * #getBlockSize()} values keeps its largest magnitude {@code a} as its float32 scale and sends
 * {@code round(x / a * maxCode)} ({@link QuantizedBits}), so a code {@code c} stands for {@code c /
 * maxCode * a} and a value comes back within {@code a / 254} of itself in 8 bits, {@code a / 14} in
 * 4 (half a step). Dividing by the block's own magnitude keeps the ratio a normal float even for
 * blocks of denormals, where {@code a / maxCode} would lose its digits, and multiplying the ratio
 * back never overflows for blocks near float32's largest value. A row's last block is padded with
 * zeros; a block of zeros has scale 0 and comes back zeros. Values that are not finite cannot be
 * carried and are refused.
 *
 * <p>Only libtorch operators run (DJL's, on the values' device), so the same code quantizes CPU and
 * GPU arrays; intermediate arrays are freed before a call returns.
 */
public final class SymmetricQuantizer {

    /** The smallest block size. */
    public static final int MIN_BLOCK_SIZE = 64;

    /** The largest block size. */
    public static final int MAX_BLOCK_SIZE = 2048;

    private static final int INT4_OFFSET = 8;

    private final QuantizedBits bits;
    private final int blockSize;

    private SymmetricQuantizer(QuantizedBits bits, int blockSize) {
        this.bits = bits;
        this.blockSize = blockSize;
    }

    /**
     * Returns the quantizer of {@code bits}-wide codes over blocks of {@code blockSize} values.
     *
     * @param bits the codes' width
     * @param blockSize values per scale, an even number from 64 to 2048
     * @return the quantizer
     * @throws IllegalArgumentException for a block size out of range or odd
     */
    public static SymmetricQuantizer of(QuantizedBits bits, int blockSize) {
        checkBlockSize(blockSize);
        return new SymmetricQuantizer(bits, blockSize);
    }

    /**
     * Checks a block size.
     *
     * @param blockSize values per scale
     * @throws IllegalArgumentException if it is not an even number from 64 to 2048
     */
    public static void checkBlockSize(int blockSize) {
        if (blockSize < MIN_BLOCK_SIZE || blockSize > MAX_BLOCK_SIZE || blockSize % 2 != 0) {
            throw new IllegalArgumentException(
                    "The quantization block size is "
                            + blockSize
                            + ": use an even number of values from "
                            + MIN_BLOCK_SIZE
                            + " to "
                            + MAX_BLOCK_SIZE
                            + " (one float32 scale per block)");
        }
    }

    /** Returns the codes' width. */
    public QuantizedBits getBits() {
        return bits;
    }

    /** Returns the number of values that share a scale. */
    public int getBlockSize() {
        return blockSize;
    }

    /**
     * Returns the number of blocks a row of {@code columns} values is cut into.
     *
     * @param columns the row's length
     * @return the blocks, the last one padded
     */
    public long blocksPerRow(long columns) {
        return (columns + blockSize - 1) / blockSize;
    }

    /**
     * Returns how many bytes a row of {@code columns} values takes quantized: its codes and scales.
     *
     * @param columns the row's length
     * @return the bytes
     */
    public long rowBytes(long columns) {
        long blocks = blocksPerRow(columns);
        return bits.codeElements(blocks * blockSize) + blocks * Float.BYTES;
    }

    /**
     * Allocates room for {@code rows} quantized rows of {@code columns} values: what a collective
     * fills.
     *
     * @param manager the arrays' manager
     * @param rows the number of rows
     * @param columns each row's length
     * @return the arrays, contents undefined
     */
    public QuantizedRows allocate(NDManager manager, long rows, long columns) {
        long blocks = rows * blocksPerRow(columns);
        return new QuantizedRows(
                manager.create(
                        new Shape(bits.codeElements(blocks * blockSize)), bits.getCodeType()),
                manager.create(new Shape(blocks), DataType.FLOAT32));
    }

    /**
     * Quantizes {@code values} as {@code rows} rows of equal length, each on its own blocks.
     *
     * @param values floats (float32, float16 or bfloat16), contiguous, {@code rows} times a row's
     *     length in all
     * @param rows the number of rows
     * @param manager the manager of the result
     * @param what what the values are, for the error
     * @return the rows quantized, each padded to a whole number of blocks
     * @throws IllegalArgumentException if a value is NaN or infinite
     */
    public QuantizedRows quantize(NDArray values, long rows, NDManager manager, String what) {
        if (rows < 1 || values.size() % rows != 0) {
            throw new IllegalArgumentException(
                    values.size() + " values cannot be cut into " + rows + " equal rows");
        }
        long columns = values.size() / rows;
        long padded = blocksPerRow(columns) * blockSize;
        try (NDManager scope = manager.newSubManager(values.getDevice())) {
            values.tempAttach(scope);
            NDArray floats = Precision.cast(values, DataType.FLOAT32).reshape(rows, columns);
            if (padded != columns) {
                floats = floats.concat(scope.zeros(new Shape(rows, padded - columns)), 1);
            }
            NDArray blocks = floats.reshape(-1, blockSize);
            NDArray absmax = blocks.abs().max(new int[] {1}, true);
            requireFinite(absmax, what);
            // A block of zeros keeps scale 0 and is divided by 1, so its codes are zeros.
            NDArray divisor = absmax.add(absmax.eq(0).toType(DataType.FLOAT32, false));
            NDArray levels =
                    blocks.div(divisor)
                            .mul(bits.getMaxCode())
                            .round()
                            .clip(-bits.getMaxCode(), bits.getMaxCode());
            NDArray codes = bits == QuantizedBits.INT8 ? levels : packPairs(levels);
            QuantizedRows quantized =
                    new QuantizedRows(
                            codes.reshape(-1).toType(bits.getCodeType(), false),
                            absmax.reshape(-1));
            quantized.codes().attach(manager);
            quantized.scales().attach(manager);
            return quantized;
        }
    }

    /**
     * Returns the values of {@code quantized} rows.
     *
     * @param quantized the rows' codes and scales
     * @param columns each row's length before padding
     * @param manager the manager of the result
     * @return a 2-D float32 array of the rows (a view of the padded rows when padded)
     */
    public NDArray dequantize(QuantizedRows quantized, long columns, NDManager manager) {
        long padded = blocksPerRow(columns) * blockSize;
        NDArray codes = quantized.codes();
        NDArray scales = quantized.scales();
        try (NDManager scope = manager.newSubManager(codes.getDevice())) {
            codes.tempAttach(scope);
            scales.tempAttach(scope);
            NDArray levels = codes.toType(DataType.FLOAT32, false);
            if (bits == QuantizedBits.INT4) {
                levels = unpackPairs(levels);
            }
            NDArray values =
                    levels.reshape(-1, blockSize)
                            .div(bits.getMaxCode())
                            .mul(scales.reshape(-1, 1))
                            .reshape(-1, padded);
            if (padded != columns) {
                values = values.get(":, 0:" + columns);
            }
            values.attach(manager);
            return values;
        }
    }

    /** Two codes a byte: {@code 16 * (even + 8) + (odd + 8)}, exact in float32. */
    private static NDArray packPairs(NDArray levels) {
        return Nibbles.pack(levels.add(INT4_OFFSET));
    }

    /** The inverse of {@link #packPairs}, on the bytes' values as float32. */
    private static NDArray unpackPairs(NDArray bytes) {
        return Nibbles.unpack(bytes).sub(INT4_OFFSET);
    }

    /** Refuses blocks whose largest magnitude is NaN or infinite (libtorch's max keeps NaN). */
    private static void requireFinite(NDArray absmax, String what) {
        NDArray bad = absmax.isNaN().logicalOr(absmax.isInfinite());
        if (bad.any().getBoolean()) {
            long block = bad.toType(DataType.INT32, false).reshape(-1).argMax().getLong();
            throw new IllegalArgumentException(
                    what
                            + " holds NaN or an infinite value (block "
                            + block
                            + "), which quantized communication cannot carry: find where the"
                            + " values overflow (a lower learning rate, gradient clipping) or"
                            + " turn communication quantization off");
        }
    }
}
