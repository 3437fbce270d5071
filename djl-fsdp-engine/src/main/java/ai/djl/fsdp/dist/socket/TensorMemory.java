package ai.djl.fsdp.dist.socket;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

import com.sun.jna.Native;
import com.sun.jna.Pointer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The memory of a CPU array as a direct {@link ByteBuffer}: the socket backend reads and writes
 * the tensor itself, with no copy.
 */
final class TensorMemory {

    private TensorMemory() {}

    /**
     * Returns a native-order direct buffer over {@code array}'s own memory.
     *
     * @param role how the caller names the array in errors, such as {@code "allGather input"}
     * @throws IllegalArgumentException if the array is not on the CPU, not contiguous, or of an
     *     element type without a fixed size
     */
    static ByteBuffer of(NDArray array, String role) {
        if (!Device.Type.CPU.equals(array.getDevice().getDeviceType())) {
            throw new IllegalArgumentException("The " + role + " is on " + array.getDevice()
                    + ", but the socket backend moves CPU arrays: initialise the process group"
                    + " for a GPU device to use NCCL, or move the array to the CPU");
        }
        DataType type = array.getDataType();
        if (type == DataType.UNKNOWN || type == DataType.STRING || type.getNumOfBytes() <= 0) {
            throw new IllegalArgumentException("The " + role + " has element type " + type
                    + ", which the socket backend cannot move");
        }
        if (array.size() == 0) {
            return ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder());
        }
        ByteBuffer memory = array.toByteBuffer(true);
        // DJL hands a non-contiguous array's memory out as a fresh contiguous copy each time it is
        // asked; writes to such a copy would be lost. Two answers at one address are the array's
        // own memory.
        if (!memory.isDirect() || address(memory) != address(array.toByteBuffer(true))) {
            throw new IllegalArgumentException("The " + role + " (shape " + array.getShape()
                    + ") is not contiguous in memory, such as a transposed or strided view: pass a"
                    + " contiguous array (collectives write their results in place)");
        }
        long expected = array.size() * type.getNumOfBytes();
        if (memory.capacity() != expected) {
            throw new IllegalArgumentException("The " + role + " exposes " + memory.capacity()
                    + " bytes where " + expected + " were expected");
        }
        return memory.order(ByteOrder.nativeOrder());
    }

    private static long address(ByteBuffer buffer) {
        return Pointer.nativeValue(Native.getDirectBufferPointer(buffer));
    }
}
