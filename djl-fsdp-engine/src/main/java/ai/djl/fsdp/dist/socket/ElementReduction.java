package ai.djl.fsdp.dist.socket;

import ai.djl.ndarray.types.DataType;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * The element-wise sum of two byte ranges holding one element type: every per-dtype arithmetic of
 * the socket backend lives here.
 *
 * <p>Each sum is one tight loop over typed views of the native-order direct buffers; the views'
 * accessors are monomorphic, so the JIT inlines them and the loop runs at memory speed, faster than
 * copying blocks into arrays and back (measured). For float32 and the integers, sum and average are
 * separate methods: a loop that first runs long after its method was compiled without it stays slow
 * (measured: 40x). The 16-bit formats share one loop for both, whose cost is the conversion to and
 * from float32 either way.
 */
abstract class ElementReduction {

    private static final ElementReduction FLOAT32_SUM = new Float32Sum();
    private static final ElementReduction FLOAT16_SUM = new HalfSum(HalfFormat.FLOAT16);
    private static final ElementReduction BFLOAT16_SUM = new HalfSum(HalfFormat.BFLOAT16);
    private static final ElementReduction INT32_SUM = new Int32Sum();
    private static final ElementReduction INT64_SUM = new Int64Sum();

    private final String typeName;
    private final int elementBytes;

    private ElementReduction(String typeName, int elementBytes) {
        this.typeName = typeName;
        this.elementBytes = elementBytes;
    }

    /**
     * Returns the reduction for {@code type}.
     *
     * @throws IllegalArgumentException if the socket backend cannot reduce {@code type}
     */
    static ElementReduction of(DataType type) {
        switch (type) {
            case FLOAT32:
                return FLOAT32_SUM;
            case FLOAT16:
                return FLOAT16_SUM;
            case BFLOAT16:
                return BFLOAT16_SUM;
            case INT32:
                return INT32_SUM;
            case INT64:
                return INT64_SUM;
            default:
                throw new IllegalArgumentException(
                        "The socket backend reduces float32, float16,"
                                + " bfloat16, int32 and int64 arrays, not "
                                + type);
        }
    }

    /** Returns a number that differs between element types and between divisors. */
    final int code(int divisor) {
        return typeName.hashCode() * 31 + divisor;
    }

    /** Returns the size of one element. */
    final int elementBytes() {
        return elementBytes;
    }

    /**
     * Writes {@code (a + b) / divisor} element-wise into {@code dst}, over {@code a.remaining()}
     * bytes from each buffer's position; positions are left unchanged. All three are native-order
     * direct buffers; {@code dst} may be {@code a} or {@code b}. Integer division truncates toward
     * zero; float16 and bfloat16 are added and divided in float32 and rounded once.
     */
    abstract void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor);

    private static final class Float32Sum extends ElementReduction {
        Float32Sum() {
            super("FLOAT32", Float.BYTES);
        }

        @Override
        void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
            FloatBuffer x = a.slice().order(a.order()).asFloatBuffer();
            FloatBuffer y = b.slice().order(b.order()).asFloatBuffer();
            FloatBuffer z = dst.slice().order(dst.order()).asFloatBuffer();
            if (divisor == 1) {
                sum(x, y, z);
            } else if (Integer.bitCount(divisor) == 1) {
                // The reciprocal of a power of two is exact, so multiplying rounds as dividing
                // does, at a fraction of the cost.
                scaledSum(x, y, z, 1f / divisor);
            } else {
                average(x, y, z, divisor);
            }
        }

        private static void scaledSum(FloatBuffer x, FloatBuffer y, FloatBuffer z, float scale) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, (x.get(i) + y.get(i)) * scale);
            }
        }

        private static void sum(FloatBuffer x, FloatBuffer y, FloatBuffer z) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, x.get(i) + y.get(i));
            }
        }

        private static void average(FloatBuffer x, FloatBuffer y, FloatBuffer z, int divisor) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, (x.get(i) + y.get(i)) / divisor);
            }
        }
    }

    /** float16 and bfloat16: widened to float32, combined, and rounded once. */
    private static final class HalfSum extends ElementReduction {
        private final HalfFormat format;

        HalfSum(HalfFormat format) {
            super(format.name(), Short.BYTES);
            this.format = format;
        }

        @Override
        void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
            ShortBuffer x = a.slice().order(a.order()).asShortBuffer();
            ShortBuffer y = b.slice().order(b.order()).asShortBuffer();
            ShortBuffer z = dst.slice().order(dst.order()).asShortBuffer();
            int count = x.remaining();
            for (int i = 0; i < count; i++) {
                float sum = format.toFloat(x.get(i)) + format.toFloat(y.get(i));
                z.put(i, format.fromFloat(divisor == 1 ? sum : sum / divisor));
            }
        }
    }

    private static final class Int32Sum extends ElementReduction {
        Int32Sum() {
            super("INT32", Integer.BYTES);
        }

        @Override
        void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
            IntBuffer x = a.slice().order(a.order()).asIntBuffer();
            IntBuffer y = b.slice().order(b.order()).asIntBuffer();
            IntBuffer z = dst.slice().order(dst.order()).asIntBuffer();
            if (divisor == 1) {
                sum(x, y, z);
            } else {
                average(x, y, z, divisor);
            }
        }

        private static void sum(IntBuffer x, IntBuffer y, IntBuffer z) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, x.get(i) + y.get(i));
            }
        }

        private static void average(IntBuffer x, IntBuffer y, IntBuffer z, int divisor) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, (x.get(i) + y.get(i)) / divisor);
            }
        }
    }

    private static final class Int64Sum extends ElementReduction {
        Int64Sum() {
            super("INT64", Long.BYTES);
        }

        @Override
        void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
            LongBuffer x = a.slice().order(a.order()).asLongBuffer();
            LongBuffer y = b.slice().order(b.order()).asLongBuffer();
            LongBuffer z = dst.slice().order(dst.order()).asLongBuffer();
            if (divisor == 1) {
                sum(x, y, z);
            } else {
                average(x, y, z, divisor);
            }
        }

        private static void sum(LongBuffer x, LongBuffer y, LongBuffer z) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, x.get(i) + y.get(i));
            }
        }

        private static void average(LongBuffer x, LongBuffer y, LongBuffer z, int divisor) {
            for (int i = 0, count = x.remaining(); i < count; i++) {
                z.put(i, (x.get(i) + y.get(i)) / divisor);
            }
        }
    }
}
