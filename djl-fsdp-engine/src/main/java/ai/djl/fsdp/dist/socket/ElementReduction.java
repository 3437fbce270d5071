package ai.djl.fsdp.dist.socket;

import ai.djl.ndarray.types.DataType;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/**
 * The element-wise sum of two byte ranges holding one element type: every per-dtype arithmetic
 * of the socket backend lives here (a bfloat16 reduction would be one more nested class).
 *
 * <p>Each sum is one tight loop over typed views of the native-order direct buffers; the views'
 * accessors are monomorphic, so the JIT inlines them and the loop runs at memory speed, faster
 * than copying blocks into arrays and back (measured). Sum and average are separate methods: a
 * loop that first runs long after its method was compiled without it stays slow (measured: 40x).
 */
abstract class ElementReduction {

    private static final ElementReduction FLOAT32_SUM = new Float32Sum();
    private static final ElementReduction FLOAT16_SUM = new Float16Sum();
    private static final ElementReduction INT32_SUM = new Int32Sum();
    private static final ElementReduction INT64_SUM = new Int64Sum();

    private final int elementBytes;

    private ElementReduction(int elementBytes) {
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
            case INT32:
                return INT32_SUM;
            case INT64:
                return INT64_SUM;
            default:
                throw new IllegalArgumentException("The socket backend reduces float32, float16,"
                        + " int32 and int64 arrays, not " + type);
        }
    }

    /** Returns a number that differs between element types and between divisors. */
    final int code(int divisor) {
        return getClass().getSimpleName().hashCode() * 31 + divisor;
    }

    /** Returns the size of one element. */
    final int elementBytes() {
        return elementBytes;
    }

    /**
     * Writes {@code (a + b) / divisor} element-wise into {@code dst}, over {@code a.remaining()}
     * bytes from each buffer's position; positions are left unchanged. All three are native-order
     * direct buffers; {@code dst} may be {@code a} or {@code b}. Integer division truncates toward
     * zero; float16 is added and divided in float32 and rounded once.
     */
    abstract void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor);

    private static final class Float32Sum extends ElementReduction {
        Float32Sum() {
            super(Float.BYTES);
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

    private static final class Float16Sum extends ElementReduction {
        Float16Sum() {
            super(Short.BYTES);
        }

        @Override
        void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
            ShortBuffer x = a.slice().order(a.order()).asShortBuffer();
            ShortBuffer y = b.slice().order(b.order()).asShortBuffer();
            ShortBuffer z = dst.slice().order(dst.order()).asShortBuffer();
            int count = x.remaining();
            for (int i = 0; i < count; i++) {
                float sum = Float16.toFloat(x.get(i)) + Float16.toFloat(y.get(i));
                z.put(i, Float16.fromFloat(divisor == 1 ? sum : sum / divisor));
            }
        }
    }

    private static final class Int32Sum extends ElementReduction {
        Int32Sum() {
            super(Integer.BYTES);
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
            super(Long.BYTES);
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
