package ai.djl.fsdp.tensor.memory;

import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * Turns the result codes of CUDA's driver calls into errors that name them ({@link CudaRuntime}
 * checks runtime calls).
 */
final class CudaStatus {

    private CudaStatus() {}

    /**
     * Throws unless a driver call succeeded.
     *
     * @param result the {@code CUresult}
     * @param call the call, with what it was called on
     * @throws IllegalStateException naming the call and the {@code CUresult}
     */
    static void driver(int result, String call) {
        if (result == cudart.CUDA_SUCCESS) {
            return;
        }
        String name = "CUresult " + result;
        try (PointerPointer<BytePointer> text = new PointerPointer<>(1)) {
            if (cudart.cuGetErrorName(result, text) == cudart.CUDA_SUCCESS && text.get(0) != null) {
                name = text.getString(0);
            }
        }
        throw new IllegalStateException(call + " failed: " + name);
    }
}
