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
 * <p>Elements are copied in blocks into primitive arrays and added in a plain loop, which the JIT
 * compiles to SIMD code; one virtual call covers a block, not an element. An instance holds its
 * block arrays, so it belongs to one thread.
 */
abstract class ElementReduction {

    /** Elements per block: two blocks of the widest type fit in a 256 KiB L2 share. */
    static final int BLOCK_ELEMENTS = 8192;

    private final int elementBytes;

    private ElementReduction(int elementBytes) {
        this.elementBytes = elementBytes;
    }

    /**
     * Returns a reduction for {@code type}.
     *
     * @throws IllegalArgumentException if the socket backend cannot reduce {@code type}
     */
    static ElementReduction of(DataType type) {
        switch (type) {
            case FLOAT32:
                return new Float32();
            case FLOAT16:
                return new Float16Sum();
            case INT32:
                return new Int32();
            case INT64:
                return new Int64();
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
     * bytes from each buffer's position; positions are left unchanged. {@code dst} may be {@code
     * a} or {@code b}. Integer division truncates toward zero; float16 is added and divided in
     * float32 and rounded once.
     */
    final void combine(ByteBuffer a, ByteBuffer b, ByteBuffer dst, int divisor) {
        int count = a.remaining() / elementBytes;
        for (int start = 0; start < count; start += BLOCK_ELEMENTS) {
            int length = Math.min(BLOCK_ELEMENTS, count - start);
            int byteOffset = start * elementBytes;
            combineBlock(a.position() + byteOffset, a, b.position() + byteOffset, b,
                    dst.position() + byteOffset, dst, length, divisor);
        }
    }

    abstract void combineBlock(int aAt, ByteBuffer a, int bAt, ByteBuffer b, int dstAt,
            ByteBuffer dst, int length, int divisor);

    private static final class Float32 extends ElementReduction {
        private final float[] x = new float[BLOCK_ELEMENTS];
        private final float[] y = new float[BLOCK_ELEMENTS];

        Float32() {
            super(Float.BYTES);
        }

        @Override
        void combineBlock(int aAt, ByteBuffer a, int bAt, ByteBuffer b, int dstAt, ByteBuffer dst,
                int length, int divisor) {
            floats(a, aAt, length).get(x, 0, length);
            floats(b, bAt, length).get(y, 0, length);
            for (int i = 0; i < length; i++) {
                x[i] += y[i];
            }
            if (divisor != 1) {
                for (int i = 0; i < length; i++) {
                    x[i] /= divisor;
                }
            }
            floats(dst, dstAt, length).put(x, 0, length);
        }

        private static FloatBuffer floats(ByteBuffer buffer, int at, int length) {
            return buffer.slice(at, length * Float.BYTES).order(buffer.order()).asFloatBuffer();
        }
    }

    private static final class Float16Sum extends ElementReduction {
        private final short[] x = new short[BLOCK_ELEMENTS];
        private final short[] y = new short[BLOCK_ELEMENTS];

        Float16Sum() {
            super(Short.BYTES);
        }

        @Override
        void combineBlock(int aAt, ByteBuffer a, int bAt, ByteBuffer b, int dstAt, ByteBuffer dst,
                int length, int divisor) {
            shorts(a, aAt, length).get(x, 0, length);
            shorts(b, bAt, length).get(y, 0, length);
            for (int i = 0; i < length; i++) {
                float sum = Float16.toFloat(x[i]) + Float16.toFloat(y[i]);
                x[i] = Float16.fromFloat(divisor == 1 ? sum : sum / divisor);
            }
            shorts(dst, dstAt, length).put(x, 0, length);
        }

        private static ShortBuffer shorts(ByteBuffer buffer, int at, int length) {
            return buffer.slice(at, length * Short.BYTES).order(buffer.order()).asShortBuffer();
        }
    }

    private static final class Int32 extends ElementReduction {
        private final int[] x = new int[BLOCK_ELEMENTS];
        private final int[] y = new int[BLOCK_ELEMENTS];

        Int32() {
            super(Integer.BYTES);
        }

        @Override
        void combineBlock(int aAt, ByteBuffer a, int bAt, ByteBuffer b, int dstAt, ByteBuffer dst,
                int length, int divisor) {
            ints(a, aAt, length).get(x, 0, length);
            ints(b, bAt, length).get(y, 0, length);
            for (int i = 0; i < length; i++) {
                x[i] += y[i];
            }
            if (divisor != 1) {
                for (int i = 0; i < length; i++) {
                    x[i] /= divisor;
                }
            }
            ints(dst, dstAt, length).put(x, 0, length);
        }

        private static IntBuffer ints(ByteBuffer buffer, int at, int length) {
            return buffer.slice(at, length * Integer.BYTES).order(buffer.order()).asIntBuffer();
        }
    }

    private static final class Int64 extends ElementReduction {
        private final long[] x = new long[BLOCK_ELEMENTS];
        private final long[] y = new long[BLOCK_ELEMENTS];

        Int64() {
            super(Long.BYTES);
        }

        @Override
        void combineBlock(int aAt, ByteBuffer a, int bAt, ByteBuffer b, int dstAt, ByteBuffer dst,
                int length, int divisor) {
            longs(a, aAt, length).get(x, 0, length);
            longs(b, bAt, length).get(y, 0, length);
            for (int i = 0; i < length; i++) {
                x[i] += y[i];
            }
            if (divisor != 1) {
                for (int i = 0; i < length; i++) {
                    x[i] /= divisor;
                }
            }
            longs(dst, dstAt, length).put(x, 0, length);
        }

        private static LongBuffer longs(ByteBuffer buffer, int at, int length) {
            return buffer.slice(at, length * Long.BYTES).order(buffer.order()).asLongBuffer();
        }
    }
}
