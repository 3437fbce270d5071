package ai.djl.fsdp.tensor.quant;

import ai.djl.Device;
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
 * zeros; a block of zeros has scale 0 and comes back zeros. A block holding NaN or an infinity is
 * sent as zero codes under a NaN scale, so every value of it comes back NaN: the collective
 * completes on every rank, and what is not finite reaches them all, as an unquantized collective
 * would carry it, for the trainer's check of the gradient norm to find on every rank alike. Nothing
 * here reads a device's values back to the host, so quantizing never waits for the device.
 *
 * <p>Two codecs compute the same codes and values, bit for bit: on host memory (contiguous CPU
 * arrays of float32 or bfloat16, up to 2 GiB) one pass in Java over the arrays' own memory, a chunk
 * of blocks at a time, writing the codes, the scales and the restored values straight where they
 * go; elsewhere (a GPU's arrays, float16) libtorch's operators on the values' device, a pass and an
 * array the input's size each, freed before a call returns.
 */
public final class SymmetricQuantizer {

    /** The smallest block size. */
    public static final int MIN_BLOCK_SIZE = 64;

    /** The largest block size. */
    public static final int MAX_BLOCK_SIZE = 2048;

    private final QuantizedBits bits;
    private final int blockSize;
    private final HostCodec host;
    private final OperatorCodec operators;

    private SymmetricQuantizer(QuantizedBits bits, int blockSize) {
        this.bits = bits;
        this.blockSize = blockSize;
        host = new HostCodec(bits, blockSize);
        operators = new OperatorCodec(bits, blockSize);
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
        return quantize(values, rows, null, manager);
    }

    /**
     * Quantizes {@code values} plus {@code residual} as {@code rows} rows of equal length, and
     * replaces the residual by what quantizing took off that sum (error feedback: added to the next
     * values quantized, the rounding does not accumulate over a series of them).
     *
     * @param values floats (float32, float16 or bfloat16), contiguous, {@code rows} times a row's
     *     length in all
     * @param rows the number of rows
     * @param residual float32, contiguous, as many values; null to quantize {@code values} alone
     * @param manager the manager of the result
     * @return the rows quantized, each padded to a whole number of blocks; a block holding a value
     *     that is not finite has a NaN scale (and NaN residuals)
     */
    public QuantizedRows quantize(NDArray values, long rows, NDArray residual, NDManager manager) {
        if (rows < 1 || values.size() % rows != 0) {
            throw new IllegalArgumentException(
                    values.size() + " values cannot be cut into " + rows + " equal rows");
        }
        if (residual != null && residual.size() != values.size()) {
            throw new IllegalArgumentException(
                    "The residual has " + residual.size() + " values for " + values.size());
        }
        long columns = values.size() / rows;
        if (!HostCodec.applies(values, residual)
                || !Device.Type.CPU.equals(manager.getDevice().getDeviceType())) {
            return operators.quantize(values, rows, padded(columns), residual, manager);
        }
        QuantizedRows quantized = allocate(manager, rows, columns);
        try {
            host.quantize(values, rows, columns, residual, quantized);
            return quantized;
        } catch (RuntimeException e) {
            quantized.close();
            throw e;
        }
    }

    /**
     * Returns the values of {@code quantized} rows.
     *
     * @param quantized the rows' codes and scales
     * @param columns each row's length before padding
     * @param manager the manager of the result
     * @return a 2-D float32 array of the rows
     */
    public NDArray dequantize(QuantizedRows quantized, long columns, NDManager manager) {
        if (!HostCodec.applies(quantized)) {
            return operators.dequantize(quantized, padded(columns), columns, manager);
        }
        long rows = quantized.scales().size() / blocksPerRow(columns);
        NDArray values = manager.create(new Shape(rows, columns), DataType.FLOAT32);
        host.restore(quantized, (int) rows, columns, false, 1, values);
        return values;
    }

    /**
     * Writes the values of {@code quantized} rows one after another into {@code target}, in its
     * type: what an all-gather's receivers restore.
     *
     * @param quantized the rows' codes and scales
     * @param columns each row's length before padding
     * @param target the rows' values, contiguous, in a float type
     */
    public void restore(QuantizedRows quantized, long columns, NDArray target) {
        restore(quantized, columns, false, 1, target);
    }

    /**
     * Writes the sum of {@code quantized} rows, divided by {@code divisor}, into {@code target} in
     * its type: the rows restored and summed in float32 (in the order of libtorch's sum over the
     * rows), what a reduction's owner of a piece computes from the pieces that arrive.
     *
     * @param quantized the rows' codes and scales
     * @param columns each row's length before padding
     * @param divisor what the sum is divided by: 1 for the sum, the rows for their mean
     * @param target the result, contiguous, {@code columns} values in a float type
     */
    public void restoreSum(QuantizedRows quantized, long columns, int divisor, NDArray target) {
        restore(quantized, columns, true, divisor, target);
    }

    private void restore(
            QuantizedRows quantized, long columns, boolean sum, int divisor, NDArray target) {
        long rows = quantized.scales().size() / blocksPerRow(columns);
        if (target.size() != (sum ? columns : rows * columns)) {
            throw new IllegalArgumentException(
                    "A target of "
                            + target.size()
                            + " values for "
                            + rows
                            + " rows of "
                            + columns
                            + (sum ? " summed" : ""));
        }
        if (HostCodec.applies(quantized, target)) {
            host.restore(quantized, (int) rows, columns, sum, divisor, target);
        } else {
            operators.restore(quantized, padded(columns), columns, sum, divisor, target);
        }
    }

    /** A row's length padded to a whole number of blocks. */
    private long padded(long columns) {
        return blocksPerRow(columns) * blockSize;
    }
}
