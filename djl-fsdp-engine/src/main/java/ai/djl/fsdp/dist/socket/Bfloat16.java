package ai.djl.fsdp.dist.socket;

/**
 * bfloat16 (the upper half of a float32: same exponent, 7 mantissa bits) to and from {@code
 * float}, rounding to nearest even as libtorch converts.
 */
final class Bfloat16 {

    private Bfloat16() {}

    /** Returns the {@code float} value of the bfloat16 bits {@code bits}: exact. */
    static float toFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** Returns the bfloat16 bits nearest to {@code value} (ties to even). */
    static short fromFloat(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) {
            // NaN: truncating could clear every payload bit left and make it infinity; keep it a
            // quiet NaN instead.
            return (short) ((bits >>> 16) | 0x0040);
        }
        // Round the 16 dropped bits to nearest, ties to the even result; a carry into the
        // exponent is the correct rounding up (to infinity past the largest finite value).
        int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
        return (short) (rounded >>> 16);
    }
}
