package ai.djl.fsdp.quant;

import java.nio.FloatBuffer;
import java.util.Arrays;

/**
 * A weight in bitsandbytes' 4-bit form: its shape, the packed codes of its flattened values ({@code
 * (n + 1) / 2} bytes, bitsandbytes' {@code weight}) and one scale a block, held plain ({@code
 * absmax}) or quantized again ({@link NestedScales}).
 */
public final class QuantizedWeight {

    private final long[] shape;
    private final QuantConfig config;
    private final byte[] packed;
    private final float[] absmax;
    private final NestedScales nested;

    private QuantizedWeight(
            long[] shape, QuantConfig config, byte[] packed, float[] absmax, NestedScales nested) {
        long count = numel(shape);
        if (packed.length != (count + 1) / 2) {
            throw new IllegalArgumentException(
                    "a 4-bit weight of shape "
                            + Arrays.toString(shape)
                            + " packs into "
                            + (count + 1) / 2
                            + " bytes, not "
                            + packed.length);
        }
        int blocks = BlockQuantizer.blocks(count, config.getBlockSize());
        int scales = nested != null ? nested.getCodes().length : absmax.length;
        if (scales != blocks) {
            throw new IllegalArgumentException(
                    "a 4-bit weight of shape "
                            + Arrays.toString(shape)
                            + " in blocks of "
                            + config.getBlockSize()
                            + " has "
                            + blocks
                            + " block scales, not "
                            + scales);
        }
        if (config.isNested() != (nested != null)) {
            throw new IllegalArgumentException(
                    "the configuration says the scales are "
                            + (config.isNested() ? "" : "not ")
                            + "quantized again, the weight's scales say otherwise");
        }
        this.shape = shape.clone();
        this.config = config;
        this.packed = packed;
        this.absmax = absmax;
        this.nested = nested;
    }

    /** Values read into the heap at a time while a weight is quantized: 16 MB of float32. */
    static final int CHUNK = 1 << 22;

    /**
     * Quantizes a weight's values, flattened in row-major order, as bitsandbytes' {@code
     * quantize_4bit} does.
     *
     * @param values the values
     * @param shape the weight's shape
     * @param config the code, block size and double quantization
     * @return the quantized weight
     * @throws IllegalArgumentException if the shape does not hold the values, or a value is not
     *     finite
     */
    public static QuantizedWeight quantize(float[] values, long[] shape, QuantConfig config) {
        return quantize(FloatBuffer.wrap(values), shape, config);
    }

    /**
     * Quantizes a weight's values, flattened in row-major order, as bitsandbytes' {@code
     * quantize_4bit} does, reading them a chunk of whole blocks at a time: the values may lie
     * outside the Java heap (a tensor's own memory), and the heap holds one chunk of them beside
     * the codes and scales, never the whole weight in float32.
     *
     * @param values the values, from the buffer's position to its limit (the position is left
     *     unchanged)
     * @param shape the weight's shape
     * @param config the code, block size and double quantization
     * @return the quantized weight
     * @throws IllegalArgumentException if the shape does not hold the values, or a value is not
     *     finite
     */
    public static QuantizedWeight quantize(FloatBuffer values, long[] shape, QuantConfig config) {
        int count = values.remaining();
        if (numel(shape) != count) {
            throw new IllegalArgumentException(
                    "shape " + Arrays.toString(shape) + " does not hold " + count + " values");
        }
        int blockSize = config.getBlockSize();
        byte[] packed = new byte[(count + 1) / 2];
        float[] absmax = new float[BlockQuantizer.blocks(count, blockSize)];
        // Whole blocks a chunk (every block size is a power of two at most 4096): each chunk
        // starts on a block and so on a byte.
        float[] buffer = new float[Math.min(CHUNK, count)];
        FloatBuffer reader = values.duplicate();
        for (int from = 0; from < count; from += CHUNK) {
            int length = Math.min(CHUNK, count - from);
            reader.get(buffer, 0, length);
            BlockQuantizer.quantize4(
                    config.getQuantType(),
                    blockSize,
                    buffer,
                    0,
                    length,
                    packed,
                    from / 2,
                    absmax,
                    from / blockSize);
        }
        if (config.isNested()) {
            return new QuantizedWeight(shape, config, packed, null, NestedScales.quantize(absmax));
        }
        return new QuantizedWeight(shape, config, packed, absmax, null);
    }

    /**
     * Holds a stored weight whose scales are plain float32.
     *
     * @param shape the weight's shape
     * @param config the code and block size (not nested)
     * @param packed the packed codes
     * @param absmax one scale a block
     * @return the weight
     * @throws IllegalArgumentException if the sizes disagree with the shape
     */
    public static QuantizedWeight of(
            long[] shape, QuantConfig config, byte[] packed, float[] absmax) {
        return new QuantizedWeight(shape, config, packed, absmax, null);
    }

    /**
     * Holds a stored weight whose scales are quantized again.
     *
     * @param shape the weight's shape
     * @param config the code and block size (nested)
     * @param packed the packed codes
     * @param nested the nested scales
     * @return the weight
     * @throws IllegalArgumentException if the sizes disagree with the shape
     */
    public static QuantizedWeight of(
            long[] shape, QuantConfig config, byte[] packed, NestedScales nested) {
        return new QuantizedWeight(shape, config, packed, null, nested);
    }

    /**
     * Returns the values the weight stands for, in float32 (bitsandbytes' {@code dequantize_4bit},
     * before any cast to the weight's own type).
     *
     * @return the values, row-major
     */
    public float[] dequantize() {
        float[] out = new float[Math.toIntExact(numel(shape))];
        BlockQuantizer.dequantize4(
                config.getQuantType(),
                config.getBlockSize(),
                packed,
                0,
                getAbsmax(),
                0,
                out,
                0,
                out.length);
        return out;
    }

    /**
     * Returns one float32 scale a block, decoded from the nested scales where they are nested.
     *
     * @return the scales
     */
    public float[] getAbsmax() {
        return nested != null ? nested.dequantize() : absmax;
    }

    /**
     * Returns the nested scales, or null where the scales are plain.
     *
     * @return the nested scales or null
     */
    public NestedScales getNested() {
        return nested;
    }

    /**
     * Returns the packed codes, two a byte, the earlier value in the high nibble.
     *
     * @return the bytes, shared
     */
    public byte[] getPacked() {
        return packed;
    }

    /**
     * Returns the weight's shape.
     *
     * @return a copy of the shape
     */
    public long[] getShape() {
        return shape.clone();
    }

    /**
     * Returns the code, block size and double quantization.
     *
     * @return the configuration
     */
    public QuantConfig getConfig() {
        return config;
    }

    private static long numel(long[] shape) {
        return Arrays.stream(shape).reduce(1, Math::multiplyExact);
    }
}
