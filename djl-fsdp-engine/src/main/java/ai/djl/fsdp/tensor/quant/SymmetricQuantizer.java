package ai.djl.fsdp.tensor.quant;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
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
 * zeros; a block of zeros has scale 0 and comes back zeros. A block holding NaN or an infinity is
 * sent as zero codes under a NaN scale, so every value of it comes back NaN: the collective
 * completes on every rank, and what is not finite reaches them all, as an unquantized collective
 * would carry it, for the trainer's check of the gradient norm to find on every rank alike. Nothing
 * here reads values back to the host, so quantizing never waits for the device.
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
     * Returns how far a value can come back from itself in a block whose largest magnitude is
     * {@code absmax}: half a step, {@code absmax / (2 maxCode)}, plus float32's rounding. Four
     * float32 operations carry a value there and back ({@code x / a}, times {@code maxCode}, the
     * code over {@code maxCode}, times {@code a}); each is within a relative {@code 2^-24} of its
     * exact result, and a division one more where a kernel multiplies by a rounded reciprocal.
     * Before the rounding to a code that moves the code by at most {@code 3 * 2^-24 * maxCode}
     * levels, {@code 3 * 2^-24 * absmax} in value; after it the restored value moves by at most
     * {@code 3 * 2^-24 * absmax}: {@code 6 * 2^-24 * absmax} in all, taken as {@code 2^-21 *
     * absmax} for the terms of second order. In a block of denormals the last product rounds to the
     * nearest denormal, within {@link Float#MIN_VALUE} more.
     *
     * @param absmax the block's largest magnitude, finite
     * @return the largest distance of a value from its restored value
     */
    public double errorBound(double absmax) {
        return absmax / (2.0 * bits.getMaxCode()) + 0x1p-21 * absmax + Float.MIN_VALUE;
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
     * @return the rows quantized, each padded to a whole number of blocks; a block holding a value
     *     that is not finite has a NaN scale
     */
    public QuantizedRows quantize(NDArray values, long rows, NDManager manager) {
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
            // libtorch's max keeps NaN, so a block's absmax is finite only if all of it is; x * 0
            // is 0 for a finite x and NaN for NaN or an infinity: such a block's scale is NaN.
            NDArray scales = absmax.add(absmax.mul(0));
            // A block of zeros keeps scale 0 and is divided by 1, so its codes are zeros.
            NDArray divisor = absmax.add(absmax.eq(0).toType(DataType.FLOAT32, false));
            NDArray ratios = blocks.div(divisor);
            // In a block that is not finite each ratio is 0 (a finite value over an infinity) or
            // NaN: its codes are zeros, and its NaN scale makes every value of it NaN.
            ratios = NDArrays.where(ratios.isNaN(), ratios.zerosLike(), ratios);
            NDArray levels =
                    ratios.mul(bits.getMaxCode())
                            .round()
                            .clip(-bits.getMaxCode(), bits.getMaxCode());
            NDArray codes = bits == QuantizedBits.INT8 ? levels : packPairs(levels);
            QuantizedRows quantized =
                    new QuantizedRows(
                            codes.reshape(-1).toType(bits.getCodeType(), false),
                            scales.reshape(-1));
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
}
