package ai.djl.fsdp.tensor;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;

/**
 * Tensors over memory this project owns ({@code aoti_torch_create_tensor_from_blob}, no deleter:
 * libtorch never frees it), on the CPU or a GPU: how {@link
 * ai.djl.fsdp.tensor.memory.ReleasableMemory} is seen by libtorch; and the shim's strides and
 * device codes that {@link Precision} shares.
 */
public final class BlobTensors {

    private static final int UNKNOWN_TYPE = Integer.MIN_VALUE;
    private static volatile int cpuType = UNKNOWN_TYPE;
    private static volatile int cudaType = UNKNOWN_TYPE;

    private BlobTensors() {}

    /**
     * Returns a contiguous tensor over {@code capacity} bytes at {@code address} on {@code device}.
     *
     * @param address the first byte of the memory
     * @param capacity the memory's size in bytes
     * @param device the memory's device; the manager must be on it
     * @param manager the PyTorch-engine manager of the array
     * @param shape the shape
     * @param precision the element type
     * @param byteOffset where the first element lies, a multiple of the element size
     * @return the array
     * @throws IllegalArgumentException for a manager on another device or an array that would not
     *     fit
     */
    public static NDArray wrap(
            long address,
            long capacity,
            Device device,
            NDManager manager,
            Shape shape,
            Precision precision,
            long byteOffset) {
        if (!(manager instanceof PtNDManager) || !device.equals(manager.getDevice())) {
            throw new IllegalArgumentException(
                    "releasable memory on "
                            + device
                            + " is wrapped with a PyTorch-engine manager on that device, got "
                            + manager.getDevice());
        }
        long end = byteOffset + shape.size() * precision.getBytes();
        if (byteOffset < 0 || byteOffset % precision.getBytes() != 0 || end > capacity) {
            throw new IllegalArgumentException(
                    "a "
                            + precision.getName()
                            + " array of shape "
                            + shape
                            + " at byte "
                            + byteOffset
                            + " does not fit in "
                            + capacity
                            + " bytes of releasable memory");
        }
        long[] sizes = shape.getShape();
        AotiTorch torch = AotiTorch.cpu();
        LongByReference tensor = new LongByReference();
        TensorMemory.check(
                torch.aoti_torch_create_tensor_from_blob(
                        new Pointer(address + byteOffset),
                        sizes.length,
                        sizes,
                        contiguousStrides(sizes),
                        0,
                        precision.shimType(torch),
                        deviceType(torch, device),
                        deviceIndex(device),
                        tensor),
                "aoti_torch_create_tensor_from_blob");
        return new PtNDArray((PtNDManager) manager, tensor.getValue());
    }

    /**
     * Copies {@code values} into {@code target}'s memory, in the target's type, through a second
     * tensor over that memory: a graph that saved views of the target reads the new values without
     * autograd seeing an in-place change, as when a collective writes the target.
     *
     * @param values the values, as many as the target holds
     * @param target a contiguous float array (float32, bfloat16 or float16)
     * @param scope the manager of the second tensor, on the target's device
     */
    public static void writeThrough(NDArray values, NDArray target, NDManager scope) {
        Precision type = Precision.ofArray(target);
        NDArray alias =
                wrap(
                        TensorMemory.contiguousDataPointer(target, "written array"),
                        target.size() * type.getBytes(),
                        target.getDevice(),
                        scope,
                        values.getShape(),
                        type,
                        0);
        TensorMemory.copy(values, alias);
    }

    /** Returns the strides, in elements, of a contiguous row-major array of {@code sizes}. */
    public static long[] contiguousStrides(long[] sizes) {
        long[] strides = new long[sizes.length];
        long stride = 1;
        for (int axis = sizes.length - 1; axis >= 0; axis--) {
            strides[axis] = stride;
            stride *= sizes[axis];
        }
        return strides;
    }

    /** Returns the shim's device type of {@code device}: CUDA for a GPU, else the CPU. */
    public static int deviceType(AotiTorch torch, Device device) {
        // The codes are constants of the library: asked once, not on every new array.
        if (device.isGpu()) {
            if (cudaType == UNKNOWN_TYPE) {
                cudaType = torch.aoti_torch_device_type_cuda();
            }
            return cudaType;
        }
        if (cpuType == UNKNOWN_TYPE) {
            cpuType = torch.aoti_torch_device_type_cpu();
        }
        return cpuType;
    }

    /** Returns the shim's device index of {@code device}: the GPU's, 0 for the CPU. */
    public static int deviceIndex(Device device) {
        return device.isGpu() ? device.getDeviceId() : 0;
    }
}
