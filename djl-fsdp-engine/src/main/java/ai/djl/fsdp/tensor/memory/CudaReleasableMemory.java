package ai.djl.fsdp.tensor.memory;

import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/**
 * {@link ReleasableMemory} on a GPU, through the CUDA driver's virtual memory management: an
 * address range is reserved once ({@code cuMemAddressReserve}, rounded up to the allocation
 * granularity), physical memory is created and mapped into it ({@code cuMemCreate}, {@code
 * cuMemMap}, {@code cuMemSetAccess}) while the buffer is needed, unmapped and released ({@code
 * cuMemUnmap}, {@code cuMemRelease}) after forward, mapped afresh at the same addresses by {@link
 * #restore} before the next gather is queued, and the reservation is freed ({@code
 * cuMemAddressFree}) by {@link #close}. The tensors over it are plain CUDA tensors to libtorch; the
 * physical memory is not libtorch's caching allocator's, so releasing it gives it back to the
 * device at once.
 *
 * <p>Streams: {@code cuMemUnmap} does not wait for work still queued that reads the memory, and
 * kernels that touch unmapped addresses fault (the CUDA context is lost). So {@link #release} and
 * {@link #close} first synchronize the current stream, on which the forward (or backward) that read
 * the buffer was queued and which already waits for the gather that wrote it. That costs a host
 * wait for the unit's queued kernels at every release: the host cannot run ahead of the GPU past a
 * released unit (the next unit's gather, started before, still overlaps its compute). {@code
 * cuMemMap} and the collective that follows {@link #restore} need no wait: nothing queued before
 * reads the new memory.
 *
 * <p>Not run on a GPU yet: the order of the driver calls is checked on the CPU with a recording
 * driver, the calls themselves only by the GPU tests, which skip without a GPU.
 */
final class CudaReleasableMemory implements ReleasableMemory {

    private final CudaVirtualMemory driver;
    private final long bytes;
    private final long size;
    private final long address;
    private long handle;
    private boolean closed;

    private CudaReleasableMemory(CudaVirtualMemory driver, long bytes, long size, long address) {
        this.driver = driver;
        this.bytes = bytes;
        this.size = size;
        this.address = address;
    }

    /**
     * Reserves addresses for at least {@code bytes} bytes and backs them.
     *
     * @param driver the GPU's driver calls
     * @param bytes the size the caller needs
     * @return the backed memory
     * @throws IllegalStateException if the driver refuses; nothing is left reserved then
     */
    static CudaReleasableMemory reserve(CudaVirtualMemory driver, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException(
                    "releasable memory needs a positive size, got " + bytes);
        }
        long granularity = driver.granularity();
        long size = (bytes + granularity - 1) / granularity * granularity;
        long address = driver.reserve(size);
        CudaReleasableMemory memory = new CudaReleasableMemory(driver, bytes, size, address);
        try {
            memory.restore();
        } catch (RuntimeException e) {
            driver.free(address, size);
            throw e;
        }
        return memory;
    }

    @Override
    public NDArray wrap(NDManager manager, Shape shape, Precision precision, long byteOffset) {
        checkOpen();
        if (handle == 0) {
            // libtorch asks the driver which device the pointer is on: it must be mapped.
            throw new IllegalStateException("released GPU memory is wrapped only once restored");
        }
        return BlobTensors.wrap(
                address, bytes, driver.getDevice(), manager, shape, precision, byteOffset);
    }

    @Override
    public void release() {
        checkOpen();
        if (handle != 0) {
            driver.synchronize();
            unmap();
        }
    }

    @Override
    public void restore() {
        checkOpen();
        if (handle != 0) {
            return;
        }
        long created = driver.create(size);
        try {
            driver.map(address, size, created);
        } catch (RuntimeException e) {
            driver.release(created);
            throw e;
        }
        handle = created;
    }

    @Override
    public long getResidentBytes() {
        checkOpen();
        return handle == 0 ? 0 : size;
    }

    @Override
    public long getAddress() {
        checkOpen();
        return address;
    }

    @Override
    public long getBytes() {
        return bytes;
    }

    /**
     * Waits for the current stream, unmaps and frees the reservation; each step runs even if an
     * earlier one fails (the first error is thrown, later ones suppressed onto it).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Runnable free = () -> driver.free(address, size);
        if (handle == 0) {
            free.run();
        } else {
            Failures.runAll(driver::synchronize, this::unmap, free);
        }
    }

    private void unmap() {
        long mapped = handle;
        handle = 0;
        try {
            driver.unmap(address, size);
        } finally {
            driver.release(mapped);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("releasable GPU memory used after close()");
        }
    }
}
