package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;
import ai.djl.fsdp.tensor.DirectShim;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.global.cudart;

/**
 * A copy from host memory to a GPU queued on the GPU's current stream without the host waiting for
 * it ({@code copy_} with {@code non_blocking}): operators and collectives queued after it on that
 * stream (the NCCL group orders its streams after the caller's current one) see the copied values.
 * Only the host must wait, through {@link #await}, before it writes the source again.
 *
 * <p>From pinned (page-locked) memory the copy is a DMA that runs while the host goes on; from
 * pageable memory CUDA stages the source before the call returns, so the copy is as safe, only
 * slower.
 */
public final class HostToDeviceCopy implements AutoCloseable {

    private CUevent_st done;

    private HostToDeviceCopy(CUevent_st done) {
        this.done = done;
    }

    /**
     * Queues the copy of {@code source} into {@code target} and records when it is done.
     *
     * @param source a contiguous CPU array, pinned for the copy to overlap
     * @param target an array of the same shape and type on a GPU
     * @return the copy in flight; {@link #close} it
     * @throws IllegalArgumentException unless the source is on the CPU and the target on a GPU
     * @throws IllegalStateException if libtorch or CUDA refuses
     */
    public static HostToDeviceCopy start(NDArray source, NDArray target) {
        Device device = target.getDevice();
        if (!device.isGpu() || source.getDevice().isGpu()) {
            throw new IllegalArgumentException(
                    "a host-to-device copy goes from the CPU to a GPU, not from "
                            + source.getDevice()
                            + " to "
                            + device);
        }
        DirectShim.copy(TensorMemory.ptHandle(target), TensorMemory.ptHandle(source), true);
        CudaRuntime cuda = CudaRuntime.get();
        cuda.setDevice(device.getDeviceId());
        return new HostToDeviceCopy(cuda.recordEvent(CudaRuntime.currentStream(device)));
    }

    /**
     * Waits until the copy, and everything queued before it on the stream, is done: the source may
     * be written afterwards.
     *
     * @throws IllegalStateException if CUDA reports a failure
     */
    public void await() {
        if (done != null) {
            CudaRuntime.get().check(cudart.cudaEventSynchronize(done), "cudaEventSynchronize");
        }
    }

    /** Releases the event; the copy itself goes on if it has not finished. */
    @Override
    public void close() {
        if (done != null) {
            cudart.cudaEventDestroy(done);
            done = null;
        }
    }
}
