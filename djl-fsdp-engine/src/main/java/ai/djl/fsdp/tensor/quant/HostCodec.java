package ai.djl.fsdp.tensor.quant;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;

/**
 * The quantizer's codes made and restored on the host in one pass over the arrays' own memory, a
 * chunk of blocks at a time: the values are read once, their codes and scales written straight into
 * the arrays that cross the wire, and the rows that arrive restored (and summed) straight into the
 * output. The only temporaries are a chunk's Java arrays, where {@link OperatorCodec}'s operators
 * each take a pass over the whole input and leave an array its size.
 *
 * <p>The results equal {@link OperatorCodec}'s bit for bit (a NaN scale's payload aside): the same
 * float32 operations in the same order, each correctly rounded in Java as in libtorch's kernels
 * ({@code x / a}, times the largest code, rounded half to even, the code over the largest code
 * times the scale), and rows summed in the order of libtorch's sum over them ({@link CascadeSum}).
 */
final class HostCodec {

    /** Blocks read or written through one Java array at a time. */
    private static final int CHUNK_BLOCKS = 256;

    private static final int INT4_OFFSET = 8;

    private final QuantizedBits bits;
    private final int blockSize;
    private final int maxCode;

    /** Each level's value over the block's scale, {@code level / maxCode}, by level + maxCode. */
    private final float[] fractions;

    HostCodec(QuantizedBits bits, int blockSize) {
        this.bits = bits;
        this.blockSize = blockSize;
        this.maxCode = bits.getMaxCode();
        fractions = new float[2 * maxCode + 1];
        for (int level = -maxCode; level <= maxCode; level++) {
            fractions[level + maxCode] = (float) level / maxCode;
        }
    }

    /**
     * Returns whether this codec reaches the arrays: codes, scales and values all in host memory
     * that one buffer addresses, one element after another, the values in float32 or bfloat16 (the
     * types read and written here).
     *
     * @param quantized the codes and scales read or written
     * @param values the values read or written, nulls ignored
     * @return true if this codec applies
     */
    static boolean applies(QuantizedRows quantized, NDArray... values) {
        return inHost(quantized.codes(), 1)
                && inHost(quantized.scales(), Float.BYTES)
                && applies(values);
    }

    /**
     * Returns whether this codec reaches float arrays: in host memory that one buffer addresses,
     * one element after another, in float32 or bfloat16.
     *
     * @param values the values read or written, nulls ignored
     * @return true if this codec applies to them
     */
    static boolean applies(NDArray... values) {
        for (NDArray array : values) {
            if (array == null) {
                continue;
            }
            Precision type = Precision.ofArray(array);
            if ((type != Precision.FLOAT32 && type != Precision.BFLOAT16)
                    || !inHost(array, type.getBytes())) {
                return false;
            }
        }
        return true;
    }

    /** Whether an array of elements of {@code bytes} is contiguous CPU memory one buffer holds. */
    private static boolean inHost(NDArray array, int bytes) {
        return Device.Type.CPU.equals(array.getDevice().getDeviceType())
                && TensorMemory.isContiguous(array)
                && array.size() * bytes <= Integer.MAX_VALUE;
    }

    /**
     * Quantizes {@code values}, {@code rows} rows of {@code columns}, into {@code quantized}; with
     * a residual, quantizes each value plus its residual and leaves in the residual what quantizing
     * took off that sum.
     */
    void quantize(
            NDArray values, long rows, long columns, NDArray residual, QuantizedRows quantized) {
        HostFloats input = new HostFloats(values, "quantized values");
        HostFloats feedback = residual == null ? null : new HostFloats(residual, "residual");
        ByteBuffer codes = TensorMemory.hostBuffer(quantized.codes(), "codes");
        FloatBuffer scales = TensorMemory.hostBuffer(quantized.scales(), "scales").asFloatBuffer();
        int chunk = CHUNK_BLOCKS * blockSize;
        float[] block = new float[chunk];
        float[] carried = residual == null ? null : new float[chunk];
        float[] levels = new float[blockSize];
        byte[] packed = new byte[(int) bits.codeElements(chunk)];
        long blocksPerRow = (columns + blockSize - 1) / blockSize;
        for (long row = 0; row < rows; row++) {
            for (long start = 0; start < columns; start += chunk) {
                int count = (int) Math.min(chunk, columns - start);
                long at = row * columns + start;
                input.read(at, block, count);
                if (feedback != null) {
                    feedback.read(at, carried, count);
                    for (int i = 0; i < count; i++) {
                        block[i] += carried[i];
                    }
                }
                long firstBlock = row * blocksPerRow + start / blockSize;
                int blocks = (count + blockSize - 1) / blockSize;
                for (int b = 0; b < blocks; b++) {
                    int from = b * blockSize;
                    int length = Math.min(blockSize, count - from);
                    float scale = quantizeBlock(block, from, length, levels);
                    scales.put((int) (firstBlock + b), scale);
                    encode(levels, packed, (int) bits.codeElements(from));
                    if (carried != null) {
                        for (int i = 0; i < length; i++) {
                            carried[from + i] =
                                    block[from + i] - fractions[(int) levels[i] + maxCode] * scale;
                        }
                    }
                }
                codes.put(
                        (int) bits.codeElements(firstBlock * blockSize),
                        packed,
                        0,
                        (int) bits.codeElements((long) blocks * blockSize));
                if (feedback != null) {
                    feedback.write(at, carried, count);
                }
            }
        }
    }

    /**
     * Writes the {@code rows} rows of {@code quantized} one after another into {@code target}
     * ({@code rows * columns} values in its type), or with {@code sum} their sum divided by {@code
     * divisor} ({@code columns} values).
     */
    void restore(
            QuantizedRows quantized,
            int rows,
            long columns,
            boolean sum,
            int divisor,
            NDArray target) {
        ByteBuffer codes = TensorMemory.hostBuffer(quantized.codes(), "codes");
        FloatBuffer scales = TensorMemory.hostBuffer(quantized.scales(), "scales").asFloatBuffer();
        HostFloats output = new HostFloats(target, "restored values");
        int chunk = CHUNK_BLOCKS * blockSize;
        float[] values = new float[chunk];
        CascadeSum total = sum ? new CascadeSum(rows, chunk) : null;
        byte[] packed = new byte[(int) bits.codeElements(chunk)];
        float[] blockScales = new float[CHUNK_BLOCKS];
        long blocksPerRow = (columns + blockSize - 1) / blockSize;
        for (long start = 0; start < columns; start += chunk) {
            int count = (int) Math.min(chunk, columns - start);
            int blocks = (count + blockSize - 1) / blockSize;
            for (int row = 0; row < rows; row++) {
                long firstBlock = row * blocksPerRow + start / blockSize;
                codes.get(
                        (int) bits.codeElements(firstBlock * blockSize),
                        packed,
                        0,
                        (int) bits.codeElements((long) blocks * blockSize));
                scales.get((int) firstBlock, blockScales, 0, blocks);
                decode(packed, blockScales, count, values);
                if (total != null) {
                    total.add(values, count);
                } else {
                    output.write(row * columns + start, values, count);
                }
            }
            if (total != null) {
                total.finish(count, values);
                if (divisor != 1) {
                    for (int i = 0; i < count; i++) {
                        values[i] /= divisor;
                    }
                }
                output.write(start, values, count);
            }
        }
    }

    /**
     * Quantizes one block's values into levels (the padding past {@code length} at level 0) and
     * returns its scale: the largest magnitude, or NaN for a block holding a value that is not
     * finite (its levels all 0).
     */
    private float quantizeBlock(float[] values, int from, int length, float[] levels) {
        float absmax = 0f;
        for (int i = 0; i < length; i++) {
            absmax = Math.max(absmax, Math.abs(values[from + i]));
        }
        Arrays.fill(levels, length, blockSize, 0f);
        if (!Float.isFinite(absmax)) {
            Arrays.fill(levels, 0, length, 0f);
            return Float.NaN;
        }
        float divisor = absmax == 0f ? 1f : absmax;
        // |x| <= absmax, so the correctly rounded x / absmax and its product with maxCode stay
        // within [-maxCode, maxCode]: the operators' clip to that range never bites here.
        for (int i = 0; i < length; i++) {
            levels[i] = (float) Math.rint(values[from + i] / divisor * maxCode);
        }
        return absmax;
    }

    /** Writes a block's levels as codes at {@code at} of {@code packed}. */
    private void encode(float[] levels, byte[] packed, int at) {
        if (bits == QuantizedBits.INT8) {
            for (int i = 0; i < blockSize; i++) {
                packed[at + i] = (byte) levels[i];
            }
        } else {
            for (int i = 0; i < blockSize; i += 2) {
                int high = (int) levels[i] + INT4_OFFSET;
                int low = (int) levels[i + 1] + INT4_OFFSET;
                packed[at + i / 2] = (byte) (high << 4 | low);
            }
        }
    }

    /** Restores {@code count} values from a chunk's codes and its blocks' scales. */
    private void decode(byte[] packed, float[] blockScales, int count, float[] values) {
        for (int start = 0, block = 0; start < count; start += blockSize, block++) {
            float scale = blockScales[block];
            int end = Math.min(count, start + blockSize);
            if (bits == QuantizedBits.INT8) {
                for (int i = start; i < end; i++) {
                    values[i] = fractions[packed[i] + maxCode] * scale;
                }
            } else {
                // Codes offset by 8, so a nibble minus 8 plus maxCode (7) indexes the table.
                for (int i = start; i < end; i++) {
                    int pair = packed[i >> 1] & 0xFF;
                    int nibble = (i & 1) == 0 ? pair >>> 4 : pair & 0xF;
                    values[i] = fractions[nibble - INT4_OFFSET + maxCode] * scale;
                }
            }
        }
    }
}
