package ai.djl.fsdp.tensor;

import ai.djl.ndarray.NDArray;
import java.nio.ByteBuffer;
import java.util.Optional;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Page-locks ("pins") the host memory of a CPU array for fast, DMA-able copies to and from a GPU:
 * CPU offload keeps parameter shards and their gradients on the host and copies them to the GPU at
 * every gather and back after every reduction.
 *
 * <p>DJL cannot allocate pinned tensors (PyTorch's {@code pin_memory()} is not in its JNI nor in
 * the C shim), so the array's own memory is registered with the CUDA runtime ({@code
 * cudaHostRegister}, through Bytedeco's {@code cudart}) and unregistered by {@link #close}, which
 * must come before the array is freed. Where the CUDA runtime cannot be loaded the array stays in
 * ordinary pageable memory ({@link #isPinned()} false), with one warning: copies still work, more
 * slowly.
 */
public final class PinnedMemory implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(PinnedMemory.class);
    private static final PinnedMemory NONE = new PinnedMemory(null, 0);
    private static boolean warned;

    private Pointer address;
    private final long bytes;

    private PinnedMemory(Pointer address, long bytes) {
        this.address = address;
        this.bytes = bytes;
    }

    /**
     * Pins {@code array}'s memory.
     *
     * @param array a contiguous CPU array that stays open until the result is closed
     * @return the registration; not pinned when the CUDA runtime is missing or the array is empty
     * @throws IllegalStateException if the CUDA runtime refuses the registration
     */
    public static PinnedMemory pin(NDArray array) {
        if (array.size() == 0 || !isRuntimeLoaded()) {
            return NONE;
        }
        ByteBuffer buffer = TensorMemory.hostBuffer(array, "pinned host array");
        long bytes = buffer.capacity();
        Pointer pointer = new Pointer(buffer);
        CudaRuntime.get()
                .check(
                        cudart.cudaHostRegister(pointer, bytes, cudart.cudaHostRegisterDefault),
                        "cudaHostRegister of " + bytes + " bytes");
        return new PinnedMemory(pointer, bytes);
    }

    /** Returns whether the memory is page-locked. */
    public boolean isPinned() {
        return address != null;
    }

    /** Returns the bytes page-locked, 0 when not pinned. */
    public long getBytes() {
        return bytes;
    }

    private static synchronized boolean isRuntimeLoaded() {
        Optional<String> problem = CudaLibraries.Part.DRIVER.problem();
        if (problem.isPresent() && !warned) {
            warned = true;
            logger.warn("CPU offload keeps shards in pageable host memory: {}", problem.get());
        }
        return problem.isEmpty();
    }

    /** Unregisters the memory; call it before the array is freed. */
    @Override
    public void close() {
        if (address != null) {
            cudart.cudaHostUnregister(address);
            address = null;
        }
    }
}
