package ai.djl.fsdp.tensor;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;

/**
 * What collectives and mixed precision need from a PyTorch tensor that DJL does not offer: its raw
 * data pointer (the CUDA device pointer that NCCL reads and writes), bfloat16 tensors, and
 * PyTorch's current CUDA stream. Backed by libtorch's stable C shim through JNA.
 *
 * <p>DJL's own creation and cast calls abort the JVM when given {@code DataType.BFLOAT16} (and a
 * bfloat16 array reports {@code DataType.UNKNOWN}), so bfloat16 arrays must be made here; once
 * made, DJL's operators work on them, and {@code toType(DataType.FLOAT32, false)} converts back.
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
     * Returns whether the array holds bfloat16 elements (which DJL reports as {@code UNKNOWN}).
     *
     * @param array a PyTorch-engine array
     * @return true for bfloat16
     */
    public static boolean isBfloat16(NDArray array) {
        IntByReference dtype = new IntByReference();
        check(AotiTorch.cpu().aoti_torch_get_dtype(handle(array), dtype), "aoti_torch_get_dtype");
        return dtype.getValue() == AotiTorch.cpu().aoti_torch_dtype_bfloat16();
    }

    /**
     * Creates an uninitialised contiguous bfloat16 array on the manager's device.
     *
     * @param manager the PyTorch-engine manager that will own the array
     * @param shape the array's shape
     * @return the new array
     */
    public static NDArray emptyBfloat16(NDManager manager, Shape shape) {
        if (!(manager instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "bfloat16 arrays need a PyTorch-engine NDManager, got "
                            + manager.getClass().getName());
        }
        AotiTorch torch = AotiTorch.cpu();
        long[] sizes = shape.getShape();
        long[] strides = new long[sizes.length];
        long stride = 1;
        for (int axis = sizes.length - 1; axis >= 0; axis--) {
            strides[axis] = stride;
            stride *= sizes[axis];
        }
        Device device = manager.getDevice();
        int deviceType =
                device.isGpu()
                        ? torch.aoti_torch_device_type_cuda()
                        : torch.aoti_torch_device_type_cpu();
        int deviceIndex = device.isGpu() ? device.getDeviceId() : 0;
        LongByReference tensor = new LongByReference();
        check(
                torch.aoti_torch_empty_strided(
                        sizes.length,
                        sizes,
                        strides,
                        torch.aoti_torch_dtype_bfloat16(),
                        deviceType,
                        deviceIndex,
                        tensor),
                "aoti_torch_empty_strided");
        return new PtNDArray((PtNDManager) manager, tensor.getValue());
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
        check(
                AotiTorch.cpu().aoti_torch_copy_(handle(target), handle(source), 0),
                "aoti_torch_copy_");
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

    private static Pointer handle(NDArray array) {
        if (!(array instanceof PtNDArray)) {
            throw new IllegalArgumentException(
                    "Tensor memory needs a PyTorch-engine array, got "
                            + array.getClass().getName());
        }
        return new Pointer(((PtNDArray) array).getHandle());
    }

    private static void check(int error, String function) {
        if (error != 0) {
            throw new IllegalStateException(
                    function + " failed; libtorch printed the reason on stderr");
        }
    }
}
