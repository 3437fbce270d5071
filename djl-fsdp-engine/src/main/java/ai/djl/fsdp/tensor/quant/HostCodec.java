package ai.djl.fsdp.tensor.quant;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;

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

    HostCodec(QuantizedBits bits, int blockSize) {
        this.bits = bits;
        this.blockSize = blockSize;
        this.maxCode = bits.getMaxCode();
    }

    /**
     * Returns whether every array lies in host memory that one buffer addresses, one element after
     * another, in float32 or bfloat16 (the types read here; codes and scales are always such).
     *
     * @param arrays the values read or written, nulls ignored
     * @return true if this codec applies
     */
    static boolean applies(NDArray... arrays) {
        for (NDArray array : arrays) {
            if (array == null) {
                continue;
            }
            Precision type = Precision.ofArray(array);
            if (!Device.Type.CPU.equals(array.getDevice().getDeviceType())
                    || !TensorMemory.isContiguous(array)
                    || (type != Precision.FLOAT32 && type != Precision.BFLOAT16)
                    || array.size() * type.getBytes() > Integer.MAX_VALUE) {
                return false;
            }
        }
        return true;
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
                            carried[from + i] = block[from + i] - restore(levels[i], scale);
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
                float[] result = total.finish(count);
                if (divisor != 1) {
                    for (int i = 0; i < count; i++) {
                        result[i] /= divisor;
                    }
                }
                output.write(start, result, count);
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
        java.util.Arrays.fill(levels, length, blockSize, 0f);
        if (!Float.isFinite(absmax)) {
            java.util.Arrays.fill(levels, 0, length, 0f);
            return Float.NaN;
        }
        float divisor = absmax == 0f ? 1f : absmax;
        for (int i = 0; i < length; i++) {
            float level = (float) Math.rint(values[from + i] / divisor * maxCode);
            levels[i] = Math.max(-maxCode, Math.min(maxCode, level));
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
        for (int i = 0; i < count; i++) {
            int code;
            if (bits == QuantizedBits.INT8) {
                code = packed[i];
            } else {
                int pair = packed[i >> 1] & 0xFF;
                code = ((i & 1) == 0 ? pair >>> 4 : pair & 0xF) - INT4_OFFSET;
            }
            values[i] = restore(code, blockScales[i / blockSize]);
        }
    }

    /** A level's value: the level over the largest code, times the scale. */
    private float restore(float level, float scale) {
        return level / maxCode * scale;
    }
}
