package ai.djl.fsdp.dist.socket;

/**
 * IEEE 754 half precision (binary16) to and from {@code float}, bit-exact and rounding to nearest
 * even, as libtorch converts. Java 17 has no {@code Float.float16ToFloat}; this is the one place
 * the project does it.
 */
public final class Float16 {

    private static final int FLOAT_EXPONENT_BIAS = 127;
    private static final int HALF_EXPONENT_BIAS = 15;

    /** The float bits of 2^-14, the smallest normal half. */
    private static final int MIN_NORMAL_BITS = (FLOAT_EXPONENT_BIAS - 14) << 23;

    /** The float bits of 65520: from here up a half rounds to infinity. */
    private static final int OVERFLOW_BITS = 0x477FF000;

    private static final int FLOAT_INFINITY_BITS = 0x7F800000;

    private Float16() {}

    /** Returns the {@code float} value of the half-precision bits {@code half}. */
    public static float toFloat(short half) {
        int bits = half & 0xFFFF;
        int sign = (bits & 0x8000) << 16;
        int exponent = (bits >>> 10) & 0x1F;
        int mantissa = bits & 0x3FF;
        if (exponent == 0x1F) {
            return Float.intBitsToFloat(sign | FLOAT_INFINITY_BITS | (mantissa << 13));
        }
        if (exponent == 0) {
            // Zero or subnormal: mantissa * 2^-24, exact in float.
            float magnitude = mantissa * 0x1p-24f;
            return sign == 0 ? magnitude : -magnitude;
        }
        int floatExponent = exponent - HALF_EXPONENT_BIAS + FLOAT_EXPONENT_BIAS;
        return Float.intBitsToFloat(sign | (floatExponent << 23) | (mantissa << 13));
    }

    /** Returns the half-precision bits nearest to {@code value} (ties to even). */
    public static short fromFloat(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int magnitude = bits & 0x7FFFFFFF;
        if (magnitude > FLOAT_INFINITY_BITS) {
            // NaN: keep it quiet and keep the top payload bits.
            return (short) (sign | 0x7E00 | ((magnitude >>> 13) & 0x3FF));
        }
        if (magnitude >= OVERFLOW_BITS) {
            return (short) (sign | 0x7C00);
        }
        if (magnitude < MIN_NORMAL_BITS) {
            // Subnormal half: the value in units of 2^-24, rounded to nearest even; a value that
            // rounds up to 2^-14 yields 0x400, the smallest normal's encoding.
            float units = Float.intBitsToFloat(magnitude) * 0x1p24f;
            return (short) (sign | (int) Math.rint(units));
        }
        int rebased = magnitude - ((FLOAT_EXPONENT_BIAS - HALF_EXPONENT_BIAS) << 23);
        // Round the 13 dropped mantissa bits to nearest, ties to the even result; a carry into
        // the exponent is the correct rounding up.
        int rounded = rebased + 0xFFF + ((rebased >>> 13) & 1);
        return (short) (sign | (rounded >>> 13));
    }
}
