package ai.djl.fsdp.dist.socket;

import ai.djl.fsdp.tensor.Precision;

/**
 * The 16-bit floating-point formats the socket backend reduces: each converts to {@code float}
 * exactly and back rounding to nearest even, bit for bit as libtorch converts ({@link
 * Precision#bits}, the project's one rounding to a narrower type; a NaN becomes a quiet NaN).
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
            return (short) Precision.FLOAT16.bits(value);
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
            return (short) Precision.BFLOAT16.bits(value);
        }
    };

    /** Returns the {@code float} value of the bits {@code bits}: exact. */
    abstract float toFloat(short bits);

    /** Returns the bits nearest to {@code value} (ties to even). */
    abstract short fromFloat(float value);
}
