package ai.djl.fsdp.quant;

import java.util.Locale;

/**
 * A 4-bit code: the 16 values a nibble stands for (bitsandbytes' {@code quant_map}, as fractions of
 * the block's largest magnitude) and the thresholds that choose a nibble for a scaled value.
 */
public enum QuantType {

    /**
     * NormalFloat4 (QLoRA): the values lie at quantiles of the standard normal distribution, scaled
     * into [-1, 1], with an exact zero; nibble order is value order. A value is coded by the
     * midpoints between neighbouring values.
     */
    NF4(
            new float[] {
                -1.0f,
                -0.6961928009986877f,
                -0.5250730514526367f,
                -0.39491748809814453f,
                -0.28444138169288635f,
                -0.18477343022823334f,
                -0.09105003625154495f,
                0.0f,
                0.07958029955625534f,
                0.16093020141124725f,
                0.24611230194568634f,
                0.33791524171829224f,
                0.44070982933044434f,
                0.5626170039176941f,
                0.7229568362236023f,
                1.0f
            },
            null),

    /**
     * A 4-bit float (one sign bit, two exponent bits, one mantissa bit, a subnormal) divided by its
     * largest value 12: nibble {@code s e e m}. The magnitude is coded by bitsandbytes' kernel
     * thresholds, which are rounded midpoints (0.583333 rather than 0.5833333).
     */
    FP4(
            fp4Code(),
            new float[] {
                0.00260417f, 0.0859375f, 0.20833333f, 0.29166667f, 0.4166667f, 0.583333f, 0.8333333f
            });

    /** The 3-bit magnitude patterns of FP4 in ascending order of the value they stand for. */
    private static final int[] FP4_BY_MAGNITUDE = {
        0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011
    };

    private final float[] code;
    private final float[] thresholds;

    QuantType(float[] code, float[] fp4Thresholds) {
        this.code = code;
        this.thresholds = fp4Thresholds != null ? fp4Thresholds : midpoints(code);
    }

    /**
     * Returns the type bitsandbytes names {@code name} ({@code nf4} or {@code fp4}, any case).
     *
     * @param name the type's name, as in {@code bnb_4bit_quant_type}
     * @return the type
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static QuantType of(String name) {
        for (QuantType type : values()) {
            if (type.getName().equalsIgnoreCase(name)) {
                return type;
            }
        }
        throw new IllegalArgumentException(
                "bnb_4bit_quant_type '" + name + "' is not a 4-bit type: use nf4 or fp4");
    }

    /**
     * Returns the name bitsandbytes uses, {@code nf4} or {@code fp4}.
     *
     * @return the lower-case name
     */
    public String getName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Returns the value each nibble stands for, by nibble: bitsandbytes' {@code quant_map}.
     *
     * @return a copy of the 16 values
     */
    public float[] getCode() {
        return code.clone();
    }

    /**
     * Returns the value nibble {@code nibble} stands for, as a fraction of its block's scale.
     *
     * @param nibble a code in 0..15
     * @return its value
     */
    public float decode(int nibble) {
        return code[nibble];
    }

    /**
     * Codes a value already divided by its block's largest magnitude. A value equal to a threshold
     * takes the lower code; NaN (an all-zero block's 0 times the infinite reciprocal) takes nibble
     * 0, as bitsandbytes' kernel gives it.
     *
     * @param scaled the value times its block's reciprocal scale
     * @return the nibble, 0..15
     */
    public int encode(float scaled) {
        if (this == NF4) {
            return above(scaled);
        }
        int sign = scaled < 0 ? 0b1000 : 0;
        return sign | FP4_BY_MAGNITUDE[above(Math.abs(scaled))];
    }

    /** How many thresholds {@code x} exceeds: none for NaN. */
    private int above(float x) {
        int count = 0;
        while (count < thresholds.length && x > thresholds[count]) {
            count++;
        }
        return count;
    }

    private static float[] midpoints(float[] sorted) {
        float[] midpoints = new float[sorted.length - 1];
        for (int i = 0; i < midpoints.length; i++) {
            midpoints[i] = (sorted[i] + sorted[i + 1]) / 2f;
        }
        return midpoints;
    }

    /** FP4's value by nibble: sign, two exponent bits with bias 2, a mantissa bit, over 12. */
    private static float[] fp4Code() {
        float[] magnitudes = {0f, 0.0625f, 8f, 12f, 4f, 6f, 2f, 3f};
        float[] code = new float[16];
        for (int bits = 0; bits < 8; bits++) {
            code[bits] = magnitudes[bits] / 12f;
            code[bits | 0b1000] = -magnitudes[bits] / 12f;
        }
        return code;
    }
}
