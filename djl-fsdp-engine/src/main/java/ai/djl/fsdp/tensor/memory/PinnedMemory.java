package ai.djl.fsdp.tensor.memory;

import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import java.nio.ByteBuffer;
import java.util.List;
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
 * must come before the array is freed. CUDA locks whole pages, and small arrays share pages: the
 * pages are counted across arrays ({@link PageLocks}), so that pinning an array whose pages are
 * partly locked already succeeds and closing one never unlocks another's pages. Where the CUDA
 * runtime cannot be loaded the array stays in ordinary pageable memory ({@link #isPinned()} false),
 * with one warning: copies still work, more slowly.
 */
public final class PinnedMemory implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(PinnedMemory.class);
    private static final PinnedMemory NONE = new PinnedMemory(null, null, 0);
    private static boolean warned;
    private static PageLocks cudaLocks;

    private final PageLocks locks;
    private List<PageLocks.Range> ranges;
    private final long bytes;

    private PinnedMemory(PageLocks locks, List<PageLocks.Range> ranges, long bytes) {
        this.locks = locks;
        this.ranges = ranges;
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
        return pin(cudaLocks(), new Pointer(buffer).address(), buffer.capacity());
    }

    /** Pins {@code [address, address + bytes)} through {@code locks}. */
    static PinnedMemory pin(PageLocks locks, long address, long bytes) {
        return new PinnedMemory(locks, locks.lock(address, bytes), bytes);
    }

    /** Returns whether the memory is page-locked. */
    public boolean isPinned() {
        return ranges != null;
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

    private static synchronized PageLocks cudaLocks() {
        if (cudaLocks == null) {
            cudaLocks = new PageLocks(new CudaHostRegister(), HostReleasableMemory.PAGE);
        }
        return cudaLocks;
    }

    /**
     * Lets go of the memory's pages, unlocking those no other pinned array lies in; call it before
     * the array is freed.
     */
    @Override
    public void close() {
        if (ranges != null) {
            locks.unlock(ranges);
            ranges = null;
        }
    }

    /** Locks pages with the CUDA runtime. */
    private static final class CudaHostRegister implements PageLocks.HostRegister {

        @Override
        public boolean register(long address, long bytes) {
            int result =
                    cudart.cudaHostRegister(
                            new DevicePointer(address), bytes, cudart.cudaHostRegisterDefault);
            if (result == cudart.cudaErrorHostMemoryAlreadyRegistered) {
                // Locked by someone else (another library, or PyTorch): theirs to unlock.
                cudart.cudaGetLastError();
                return false;
            }
            CudaRuntime.get().check(result, "cudaHostRegister of " + bytes + " bytes");
            return true;
        }

        @Override
        public void unregister(long address) {
            CudaRuntime.get()
                    .check(
                            cudart.cudaHostUnregister(new DevicePointer(address)),
                            "cudaHostUnregister");
        }
    }
}
