package ai.djl.fsdp.dist.socket;

/**
 * IEEE 754 half precision (binary16) to {@code float}, exact, as libtorch converts. Java 17 has no
 * {@code Float.float16ToFloat}; this is the one place the project does it (the rounding back is
 * {@link ai.djl.fsdp.tensor.Precision#bits}).
 */
public final class Float16 {

    private static final int FLOAT_EXPONENT_BIAS = 127;
    private static final int HALF_EXPONENT_BIAS = 15;

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
}
