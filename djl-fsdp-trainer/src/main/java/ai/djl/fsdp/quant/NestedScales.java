package ai.djl.fsdp.quant;

/**
 * A 4-bit weight's block scales quantized again (bitsandbytes' double quantization, {@code
 * bnb_4bit_use_double_quant}): the scales less their mean (the {@code offset}) coded in 8 bits over
 * the signed {@link DynamicMap}, in blocks of 256 with a float32 scale each. What a checkpoint
 * stores as {@code absmax} (the codes), {@code nested_absmax}, {@code nested_quant_map} and {@code
 * nested_offset}.
 */
public final class NestedScales {

    /** The block size bitsandbytes codes the scales in. */
    public static final int BLOCK_SIZE = 256;

    private final byte[] codes;
    private final float[] absmax;
    private final float[] map;
    private final float offset;

    /**
     * Holds stored nested scales.
     *
     * @param codes one 8-bit code a 4-bit block
     * @param absmax one scale a block of {@link #BLOCK_SIZE} codes
     * @param map the 256 values the codes index
     * @param offset the mean the codes are taken from
     * @throws IllegalArgumentException if the lengths disagree
     */
    public NestedScales(byte[] codes, float[] absmax, float[] map, float offset) {
        if (absmax.length != BlockQuantizer.blocks(codes.length, BLOCK_SIZE)) {
            throw new IllegalArgumentException(
                    "nested_absmax holds "
                            + absmax.length
                            + " scales, but "
                            + codes.length
                            + " block codes need "
                            + BlockQuantizer.blocks(codes.length, BLOCK_SIZE));
        }
        if (map.length != DynamicMap.SIZE) {
            throw new IllegalArgumentException(
                    "nested_quant_map holds " + map.length + " values, not " + DynamicMap.SIZE);
        }
        this.codes = codes;
        this.absmax = absmax;
        this.map = map;
        this.offset = offset;
    }

    /**
     * Quantizes block scales as bitsandbytes does, taking off their mean.
     *
     * @param scales the 4-bit blocks' scales
     * @return the nested scales
     */
    public static NestedScales quantize(float[] scales) {
        return quantize(scales, mean(scales));
    }

    /**
     * Quantizes block scales less a given offset (the mean over every rank's blocks, when each rank
     * holds some of them).
     *
     * @param scales the 4-bit blocks' scales
     * @param offset the offset to take off
     * @return the nested scales
     */
    public static NestedScales quantize(float[] scales, float offset) {
        float[] centred = new float[scales.length];
        for (int i = 0; i < scales.length; i++) {
            centred[i] = scales[i] - offset;
        }
        float[] map = DynamicMap.signed();
        byte[] codes = new byte[scales.length];
        float[] absmax = new float[BlockQuantizer.blocks(scales.length, BLOCK_SIZE)];
        BlockQuantizer.quantize8(map, BLOCK_SIZE, centred, codes, absmax);
        return new NestedScales(codes, absmax, map, offset);
    }

    /**
     * Returns the mean of the scales, summed in double precision and rounded to float32 (libtorch
     * sums float32 in its own order, so its mean can differ from this in the last bit; a stored
     * offset is used as stored).
     *
     * @param scales the scales
     * @return their mean
     */
    public static float mean(float[] scales) {
        double sum = 0;
        for (float scale : scales) {
            sum += scale;
        }
        return (float) (sum / scales.length);
    }

    /**
     * Returns the scales the codes stand for: a code's value times its block's scale, plus the
     * offset, in float32.
     *
     * @return one scale a 4-bit block
     */
    public float[] dequantize() {
        float[] scales = BlockQuantizer.dequantize8(map, BLOCK_SIZE, codes, absmax);
        for (int i = 0; i < scales.length; i++) {
            scales[i] += offset;
        }
        return scales;
    }

    /**
     * Returns the 8-bit codes, one a 4-bit block (a checkpoint's {@code absmax}).
     *
     * @return the codes, shared
     */
    public byte[] getCodes() {
        return codes;
    }

    /**
     * Returns the scales of the codes' blocks ({@code nested_absmax}).
     *
     * @return the scales, shared
     */
    public float[] getAbsmax() {
        return absmax;
    }

    /**
     * Returns the map the codes index ({@code nested_quant_map}).
     *
     * @return the 256 values, shared
     */
    public float[] getMap() {
        return map;
    }

    /**
     * Returns the mean taken off before coding ({@code nested_offset}).
     *
     * @return the offset
     */
    public float getOffset() {
        return offset;
    }
}
