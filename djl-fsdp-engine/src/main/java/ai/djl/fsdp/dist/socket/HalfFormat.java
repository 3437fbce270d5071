package ai.djl.fsdp.dist.socket;

/**
 * The 16-bit floating-point formats the socket backend reduces: each converts to {@code float}
 * exactly and back rounding to nearest even, bit for bit as libtorch converts.
 */
enum HalfFormat {
    /** IEEE 754 binary16: 5 exponent bits, 10 mantissa bits. */
    FLOAT16 {
        @Override
        float toFloat(short bits) {
            return Float16.toFloat(bits);
        }

        @Override
        short fromFloat(float value) {
            return Float16.fromFloat(value);
        }
    },

    /** The upper half of a float32: the same 8 exponent bits, 7 mantissa bits. */
    BFLOAT16 {
        @Override
        float toFloat(short bits) {
            return Float.intBitsToFloat((bits & 0xFFFF) << 16);
        }

        @Override
        short fromFloat(float value) {
            int bits = Float.floatToRawIntBits(value);
            if ((bits & 0x7FFFFFFF) > 0x7F800000) {
                // NaN: truncating could clear every payload bit left and make it infinity; keep
                // it a quiet NaN instead.
                return (short) ((bits >>> 16) | 0x0040);
            }
            // Round the 16 dropped bits to nearest, ties to the even result; a carry into the
            // exponent is the correct rounding up (to infinity past the largest finite value).
            int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
            return (short) (rounded >>> 16);
        }
    };

    /** Returns the {@code float} value of the bits {@code bits}: exact. */
    abstract float toFloat(short bits);

    /** Returns the bits nearest to {@code value} (ties to even). */
    abstract short fromFloat(float value);
}
