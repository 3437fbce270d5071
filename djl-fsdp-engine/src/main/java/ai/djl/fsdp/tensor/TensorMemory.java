package ai.djl.fsdp.tensor;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * What collectives and mixed precision need from a PyTorch tensor that DJL does not offer: its raw
 * data pointer (the CUDA device pointer that NCCL reads and writes, the host memory the socket
 * backend moves), whether it is contiguous, its element type including bfloat16, bfloat16 tensors,
 * and PyTorch's current CUDA stream. Backed by libtorch's stable C shim through JNA; every
 * collective backend reaches an array's memory through here.
 *
 * <p>DJL's own creation and cast calls abort the JVM when given {@code DataType.BFLOAT16} (and a
 * bfloat16 array reports {@code DataType.UNKNOWN}), so bfloat16 arrays must be made here or by
 * {@link Precision}; once made, DJL's operators work on them, and {@link Precision#cast(NDArray,
 * DataType)} converts between any types safely.
 */
public final class TensorMemory {

    private TensorMemory() {}

    /**
     * Returns the address of the array's first element: host memory for a CPU array, device memory
     * for a GPU array. It addresses all the elements as one flat buffer only when the array is
     * contiguous, and stays valid while the array is open.
     *
     * @param array a PyTorch-engine array
     * @return the data pointer
     */
    public static long dataPointer(NDArray array) {
        LongByReference pointer = new LongByReference();
        check(
                AotiTorch.cpu().aoti_torch_get_data_ptr(handle(array), pointer),
                "aoti_torch_get_data_ptr");
        return pointer.getValue();
    }

    /**
     * Returns the address of the array's memory after checking that it is contiguous, so that its
     * {@code size()} elements lie one after another from there.
     *
     * @param array a PyTorch-engine array
     * @param role how the caller names the array in errors, such as {@code "allGather input"}
     * @return the data pointer
     * @throws IllegalArgumentException if the array is a strided or transposed view
     */
    public static long contiguousDataPointer(NDArray array, String role) {
        if (!isContiguous(array)) {
            throw new IllegalArgumentException(
                    "The "
                            + role
                            + " (shape "
                            + array.getShape()
                            + ") is not contiguous in memory, such as a transposed or strided"
                            + " view: pass a contiguous array (collectives write their results in"
                            + " place)");
        }
        return dataPointer(array);
    }

    /**
     * Returns a native-order direct buffer over a CPU array's own memory: writes through it change
     * the array, with no copy. It stays valid while the array is open.
     *
     * @param array a contiguous PyTorch-engine array on the CPU, of at most 2 GiB ({@link
     *     Integer#MAX_VALUE} bytes, a buffer's limit)
     * @param role how the caller names the array in errors, such as {@code "allGather input"}
     * @return the buffer, its capacity the array's size in bytes
     * @throws IllegalArgumentException if the array is not on the CPU, not contiguous, of an
     *     element type without a fixed size, or larger than a buffer can be
     */
    public static ByteBuffer hostBuffer(NDArray array, String role) {
        long bytes = hostBytes(array, role);
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "The "
                            + role
                            + " (shape "
                            + array.getShape()
                            + ") holds "
                            + bytes
                            + " bytes, more than one buffer's 2 GiB: pass it in pieces"
                            + " (hostBuffers)");
        }
        return hostBuffers(array, role, Integer.MAX_VALUE).get(0);
    }

    /**
     * Returns native-order direct buffers over consecutive pieces of a CPU array's own memory, each
     * at most {@code maxBytes} long, in order: together they are the array's bytes, with no copy,
     * valid while the array is open. An array too large for one buffer goes through a collective
     * this way, piece by piece.
     *
     * @param array a contiguous PyTorch-engine array on the CPU
     * @param role how the caller names the array in errors, such as {@code "broadcast array"}
     * @param maxBytes the largest piece, positive
     * @return the pieces; one empty buffer for an empty array
     * @throws IllegalArgumentException if the array is not on the CPU, not contiguous, or of an
     *     element type without a fixed size
     */
    public static List<ByteBuffer> hostBuffers(NDArray array, String role, int maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive, got " + maxBytes);
        }
        long bytes = hostBytes(array, role);
        if (bytes == 0) {
            // An empty tensor may have no memory at all (a null data pointer).
            return List.of(ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder()));
        }
        Pointer memory = new Pointer(contiguousDataPointer(array, role));
        List<ByteBuffer> pieces = new ArrayList<>((int) ((bytes - 1) / maxBytes + 1));
        for (long from = 0; from < bytes; from += maxBytes) {
            pieces.add(
                    memory.getByteBuffer(from, Math.min(maxBytes, bytes - from))
                            .order(ByteOrder.nativeOrder()));
        }
        return pieces;
    }

    /** The bytes of a CPU array whose elements have a fixed size; refuses any other. */
    private static long hostBytes(NDArray array, String role) {
        if (!Device.Type.CPU.equals(array.getDevice().getDeviceType())) {
            throw new IllegalArgumentException(
                    "The "
                            + role
                            + " is on "
                            + array.getDevice()
                            + ", but only a CPU array's memory is host memory: move the array to"
                            + " the CPU, or use a process group on the GPU (NCCL)");
        }
        DataType type = dataType(array);
        if (type == DataType.UNKNOWN || type == DataType.STRING || type.getNumOfBytes() <= 0) {
            throw new IllegalArgumentException(
                    "The " + role + " has element type " + type + ", which has no fixed size");
        }
        return array.size() * type.getNumOfBytes();
    }

    /**
     * Returns whether the array's elements lie one after another in row-major order, as PyTorch's
     * {@code is_contiguous()} decides (the stride of an axis of length 1 does not matter).
     *
     * @param array a PyTorch-engine array
     * @return true for a contiguous array
     */
    public static boolean isContiguous(NDArray array) {
        return DirectShim.isContiguous(ptHandle(array));
    }

    /**
     * Returns the array's element type, reading bfloat16 (which DJL reports as {@code UNKNOWN})
     * from libtorch. The answer describes the array; never hand {@code BFLOAT16} to a DJL creation
     * or cast call, which aborts the JVM.
     *
     * @param array a PyTorch-engine array
     * @return the element type, {@code BFLOAT16} for bfloat16 arrays
     */
    public static DataType dataType(NDArray array) {
        DataType type = array.getDataType();
        return type == DataType.UNKNOWN && isBfloat16(array) ? DataType.BFLOAT16 : type;
    }

    /**
     * Returns whether the array holds bfloat16 elements (which DJL reports as {@code UNKNOWN}).
     *
     * @param array a PyTorch-engine array
     * @return true for bfloat16
     */
    public static boolean isBfloat16(NDArray array) {
        return Precision.ofArray(array) == Precision.BFLOAT16;
    }

    /**
     * Creates an uninitialised contiguous bfloat16 array on the manager's device.
     *
     * @param manager the PyTorch-engine manager that will own the array
     * @param shape the array's shape
     * @return the new array
     */
    public static NDArray emptyBfloat16(NDManager manager, Shape shape) {
        return Precision.BFLOAT16.empty(manager, shape);
    }

    /**
     * Returns a bfloat16 copy of {@code source} (any element type), owned by the source's manager
     * and on its device.
     *
     * @param source a PyTorch-engine array
     * @return the rounded copy
     */
    public static NDArray toBfloat16(NDArray source) {
        NDArray target = emptyBfloat16(source.getManager(), source.getShape());
        copy(source, target);
        return target;
    }

    /**
     * Copies {@code source} into {@code target} in place, converting the element type (this is how
     * values move into and out of bfloat16 buffers without a new allocation).
     *
     * @param source the array to read
     * @param target an array of the same shape (or one {@code source} broadcasts to)
     */
    public static void copy(NDArray source, NDArray target) {
        DirectShim.copy(ptHandle(target), ptHandle(source), false);
    }

    /**
     * Returns a second DJL array over the same libtorch tensor: the same memory, the same autograd
     * identity (a gradient reaching either is the tensor's one gradient), owned by {@code manager}.
     * Closing either array leaves the other open, so an array another component owns can be handed
     * to code that attaches or closes what it is given.
     *
     * @param array a PyTorch-engine array
     * @param manager the new array's manager, a PyTorch-engine manager
     * @return the new array
     */
    public static NDArray newReference(NDArray array, NDManager manager) {
        return new PtNDArray((PtNDManager) manager, DirectShim.newTensorHandle(ptHandle(array)));
    }

    /**
     * Returns PyTorch's current CUDA stream on the device ({@code cudaStream_t}), on which DJL's
     * operators run: work queued on it is ordered with theirs.
     *
     * @param device a GPU
     * @return the stream handle
     * @throws UnsupportedOperationException with the CPU build of libtorch
     */
    public static long currentCudaStream(Device device) {
        if (!device.isGpu()) {
            throw new IllegalArgumentException("CUDA streams exist on GPUs only, got " + device);
        }
        LongByReference stream = new LongByReference();
        check(
                AotiTorch.cuda().aoti_torch_get_current_cuda_stream(device.getDeviceId(), stream),
                "aoti_torch_get_current_cuda_stream");
        return stream.getValue();
    }

    /**
     * Returns the libtorch tensor handle of a PyTorch-engine array, for the shim's calls.
     *
     * @param array the array
     * @return its tensor handle
     * @throws IllegalArgumentException for an array of another engine
     */
    public static Pointer handle(NDArray array) {
        return new Pointer(ptHandle(array));
    }

    /**
     * Returns the libtorch tensor handle of a PyTorch-engine array as a number.
     *
     * @param array a PyTorch-engine array
     * @return its {@code at::Tensor*}
     * @throws IllegalArgumentException if it is another engine's array
     */
    public static long ptHandle(NDArray array) {
        if (!(array instanceof PtNDArray)) {
            throw new IllegalArgumentException(
                    "Tensor memory needs a PyTorch-engine array, got "
                            + array.getClass().getName());
        }
        return ((PtNDArray) array).getHandle();
    }

    /**
     * Throws if a shim call failed.
     *
     * @param error the call's return code, 0 on success
     * @param function the call's name, for the message
     * @throws IllegalStateException if {@code error} is not 0
     */
    public static void check(int error, String function) {
        if (error != 0) {
            throw new IllegalStateException(
                    function + " failed; libtorch printed the reason on stderr");
        }
    }
}
