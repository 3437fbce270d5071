package ai.djl.fsdp.tensor.quant;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;

/**
 * A contiguous CPU array of float32 or bfloat16 values read and written in place as float32, a run
 * of elements at a time: bfloat16 widens exactly and is written rounded to nearest even, as
 * libtorch's casts round ({@link Precision#bits}).
 */
final class HostFloats {

    private final FloatBuffer floats;
    private final ShortBuffer halves;
    private short[] scratch = new short[0];

    /**
     * Opens an array's memory.
     *
     * @param array float32 or bfloat16, contiguous, on the CPU, at most 2 GiB
     * @param role how errors name the array
     */
    HostFloats(NDArray array, String role) {
        ByteBuffer bytes = TensorMemory.hostBuffer(array, role);
        if (Precision.ofArray(array) == Precision.FLOAT32) {
            floats = bytes.asFloatBuffer();
            halves = null;
        } else {
            floats = null;
            halves = bytes.asShortBuffer();
        }
    }

    /** Reads {@code count} values from element {@code from} into the start of {@code into}. */
    void read(long from, float[] into, int count) {
        if (floats != null) {
            floats.get((int) from, into, 0, count);
            return;
        }
        short[] bits = scratch(count);
        halves.get((int) from, bits, 0, count);
        for (int i = 0; i < count; i++) {
            into[i] = Float.intBitsToFloat(bits[i] << 16);
        }
    }

    /** Writes the first {@code count} of {@code values} from element {@code from}. */
    void write(long from, float[] values, int count) {
        if (floats != null) {
            floats.put((int) from, values, 0, count);
            return;
        }
        short[] bits = scratch(count);
        for (int i = 0; i < count; i++) {
            bits[i] = (short) Precision.BFLOAT16.bits(values[i]);
        }
        halves.put((int) from, bits, 0, count);
    }

    private short[] scratch(int count) {
        if (scratch.length < count) {
            scratch = new short[count];
        }
        return scratch;
    }
}
