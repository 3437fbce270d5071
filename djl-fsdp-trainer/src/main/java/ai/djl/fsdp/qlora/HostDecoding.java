package ai.djl.fsdp.qlora;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * bitsandbytes' 4-bit decoding on the host in one pass: read the packed bytes where libtorch holds
 * them, and write each value, already in the compute type, straight into the weight's own memory.
 *
 * <p>The values are those of {@link Dequantization#fourBit} followed by libtorch's cast: each is
 * the float32 product of its code's value and its block's scale, rounded to the compute type to
 * nearest even as libtorch's casts round ({@link Precision#bits}). A block's 16 possible values are
 * computed and rounded once, then every byte of the block looks its two values up: 16 products and
 * roundings a block of 64 values instead of one a value, and no intermediate array (libtorch's
 * operators take a pass each over a chunk's values: the bytes widened to int64 indexes, the lookup,
 * the scale, the cast, then the chunks' concatenation).
 */
final class HostDecoding {

    /** Values decoded into one Java array before they are copied into the weight. */
    private static final int CHUNK = 1 << 14;

    /** The largest piece of the weight's memory one buffer addresses (a multiple of a chunk). */
    private static final int PIECE_BYTES = 1 << 30;

    private static final int NIBBLE = 16;

    private HostDecoding() {}

    /**
     * Returns whether this decoding applies: codes in host memory, laid out one after another.
     *
     * @param packed the packed codes
     * @return true for a contiguous CPU array
     */
    static boolean applies(NDArray packed) {
        return Device.Type.CPU.equals(packed.getDevice().getDeviceType())
                && TensorMemory.isContiguous(packed);
    }

    /**
     * Decodes 4-bit codes packed two a byte (the earlier in the high nibble) into a new array.
     *
     * @param packed the bytes (uint8), contiguous, on the CPU
     * @param code the 16 values by nibble
     * @param scales one scale a block
     * @param blockSize the values a scale covers, even and dividing {@value #CHUNK}
     * @param shape the weight's shape, its size the number of values
     * @param target the decoded weight's type
     * @param manager the decoded weight's manager
     * @return the weight
     */
    static NDArray fourBit(
            NDArray packed,
            float[] code,
            float[] scales,
            int blockSize,
            Shape shape,
            Precision target,
            NDManager manager) {
        long count = shape.size();
        ByteBuffer bytes = TensorMemory.hostBuffer(packed, "4-bit weight's codes");
        NDArray weight = target.empty(manager, shape);
        try {
            List<ByteBuffer> pieces =
                    TensorMemory.hostBuffers(weight, "decoded weight", PIECE_BYTES);
            Chunk chunk = new Chunk(target);
            int perPiece = PIECE_BYTES / target.getBytes();
            for (long from = 0; from < count; from += CHUNK) {
                int values = (int) Math.min(CHUNK, count - from);
                chunk.decode(bytes, from, values, code, scales, blockSize);
                ByteBuffer piece = pieces.get((int) (from / perPiece));
                chunk.copyTo(piece, (int) (from % perPiece), values);
            }
            return weight;
        } catch (RuntimeException e) {
            weight.close();
            throw e;
        }
    }

    /** One chunk's bytes, each block's 16 values, and the decoded values as the target's bits. */
    private static final class Chunk {

        private final Precision target;
        private final byte[] bytes = new byte[CHUNK / 2];
        private final int[] table = new int[NIBBLE];
        private final short[] narrow;
        private final int[] wide;

        Chunk(Precision target) {
            this.target = target;
            boolean isWide = target.getBytes() == Integer.BYTES;
            narrow = isWide ? null : new short[CHUNK];
            wide = isWide ? new int[CHUNK] : null;
        }

        /** Decodes {@code values} values from value {@code from}, a multiple of a chunk. */
        void decode(
                ByteBuffer packed,
                long from,
                int values,
                float[] code,
                float[] scales,
                int blockSize) {
            int byteCount = (values + 1) / 2;
            packed.get((int) (from / 2), bytes, 0, byteCount);
            long firstBlock = from / blockSize;
            for (int start = 0; start < values; start += blockSize) {
                float scale = scales[(int) (firstBlock + start / blockSize)];
                for (int nibble = 0; nibble < NIBBLE; nibble++) {
                    table[nibble] = target.bits(code[nibble] * scale);
                }
                int end = Math.min(values, start + blockSize);
                if (wide != null) {
                    pairs(start, end, wide);
                } else {
                    pairs(start, end, narrow);
                }
            }
        }

        /**
         * Each byte's two values from the block's table; an odd last value from its high nibble.
         */
        private void pairs(int start, int end, int[] out) {
            int i = start;
            for (; i + 1 < end; i += 2) {
                int b = bytes[i >> 1];
                out[i] = table[(b >> 4) & 0xF];
                out[i + 1] = table[b & 0xF];
            }
            if (i < end) {
                out[i] = table[(bytes[i >> 1] >> 4) & 0xF];
            }
        }

        private void pairs(int start, int end, short[] out) {
            int i = start;
            for (; i + 1 < end; i += 2) {
                int b = bytes[i >> 1];
                out[i] = (short) table[(b >> 4) & 0xF];
                out[i + 1] = (short) table[b & 0xF];
            }
            if (i < end) {
                out[i] = (short) table[(bytes[i >> 1] >> 4) & 0xF];
            }
        }

        /** Copies the decoded values to element {@code at} of a piece of the weight. */
        void copyTo(ByteBuffer piece, int at, int values) {
            ByteBuffer ordered = piece.order(ByteOrder.nativeOrder());
            if (wide != null) {
                ordered.asIntBuffer().put(at, wide, 0, values);
            } else {
                ordered.asShortBuffer().put(at, narrow, 0, values);
            }
        }
    }
}
