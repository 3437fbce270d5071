package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;
import ai.djl.fsdp.tensor.TensorMemory;
import java.util.function.Function;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;

/**
 * The CUDA runtime calls the engine makes in several places (result checks, making a GPU current,
 * recording events, libtorch's current stream), each failure thrown as the exception its caller
 * reports: {@link #get()} throws {@link IllegalStateException}, the NCCL group its own collective
 * failures.
 */
public final class CudaRuntime {

    private static final CudaRuntime DEFAULT = new CudaRuntime(IllegalStateException::new);

    private final Function<String, ? extends RuntimeException> error;

    private CudaRuntime(Function<String, ? extends RuntimeException> error) {
        this.error = error;
    }

    /** Returns the calls, failing with {@link IllegalStateException}. */
    public static CudaRuntime get() {
        return DEFAULT;
    }

    /**
     * Returns the calls, failing with the exception {@code error} makes from the message.
     *
     * @param error makes the exception from a message that names the call and CUDA's error
     * @return the calls
     */
    public static CudaRuntime throwing(Function<String, ? extends RuntimeException> error) {
        return new CudaRuntime(error);
    }

    /**
     * Throws unless a runtime call succeeded.
     *
     * @param result the {@code cudaError_t}
     * @param call the call, with what it was called on
     */
    public void check(int result, String call) {
        if (result != cudart.cudaSuccess) {
            throw error.apply(
                    call
                            + " failed: "
                            + cudart.cudaGetErrorName(result).getString()
                            + " ("
                            + cudart.cudaGetErrorString(result).getString()
                            + ")");
        }
    }

    /**
     * Makes GPU {@code deviceId} current on the calling thread ({@code cudaSetDevice}, which also
     * makes its primary context, the one libtorch uses, current for the driver API).
     *
     * @param deviceId the GPU's index
     */
    public void setDevice(int deviceId) {
        check(cudart.cudaSetDevice(deviceId), "cudaSetDevice(" + deviceId + ")");
    }

    /**
     * Records a timing-free event on {@code stream}; the caller destroys it.
     *
     * @param stream the stream
     * @return the event
     */
    public CUevent_st recordEvent(CUstream_st stream) {
        CUevent_st event = new CUevent_st();
        check(
                cudart.cudaEventCreateWithFlags(event, cudart.cudaEventDisableTiming),
                "cudaEventCreateWithFlags");
        int result = cudart.cudaEventRecord(event, stream);
        if (result != cudart.cudaSuccess) {
            cudart.cudaEventDestroy(event);
            check(result, "cudaEventRecord");
        }
        return event;
    }

    /**
     * Returns libtorch's current stream on {@code device} for the calling thread.
     *
     * @param device a GPU
     * @return the stream
     */
    public static CUstream_st currentStream(Device device) {
        return new CUstream_st(new DevicePointer(TensorMemory.currentCudaStream(device)));
    }
}
