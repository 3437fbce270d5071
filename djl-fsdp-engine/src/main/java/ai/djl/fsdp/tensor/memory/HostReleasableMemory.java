package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;
import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * {@link ReleasableMemory} on the CPU: host memory whose physical pages can be given back while
 * tensors, views and autograd graphs still refer to its addresses, and filled again in place.
 *
 * <p>The memory is an anonymous private mapping this class makes itself ({@code mmap}), wrapped as
 * tensors with {@code aoti_torch_create_tensor_from_blob} (no deleter: libtorch never frees it).
 * {@link #release} is {@code madvise(MADV_DONTNEED)}: the kernel drops the pages at once (the
 * resident set falls by their size) but the addresses stay mapped, reading as zeros until written;
 * writing the gathered values into the same addresses ({@link #getBuffer}, {@link #getAddress}:
 * what an all-gather into its output does) before backward brings them back, and every tensor that
 * saved them for backward reads the new values. So {@link #restore} has nothing to do: the first
 * write backs a page again.
 *
 * <p>Why not libtorch's own calls (tried on a 64 MiB leaf, 4096x4096 view in a matMul graph):
 * {@code aoti_torch_cpu_resize_} to {@code [0]} resizes the tensor, not its storage (PyTorch's
 * FSDP2 resizes the untyped storage, which the C shim does not reach): the resident set did not
 * move, and backward still worked because the view autograd saved keeps the whole storage. {@code
 * aoti_torch_cpu_set__source_Tensor} onto an empty tensor swaps the tensor's storage while the
 * saved view keeps the old one alive: again nothing was freed, and backward failed autograd's
 * version check ("modified by an inplace operation"). The same check forbids refilling with {@code
 * copy_} or any libtorch in-place operator; refill through the raw memory, as collectives do.
 *
 * <p>Lifetime: {@link #close} unmaps the memory; call it only when no tensor, view or graph made
 * over it is still used, or libtorch reads unmapped memory and the JVM dies.
 */
final class HostReleasableMemory implements ReleasableMemory {

    /** The host's page size in bytes. */
    static final long PAGE = LibC.INSTANCE.sysconf(LibC.SC_PAGESIZE);

    private final Pointer base;
    private final long bytes;
    private final long mapped;
    private boolean closed;

    private HostReleasableMemory(Pointer base, long bytes, long mapped) {
        this.base = base;
        this.bytes = bytes;
        this.mapped = mapped;
    }

    /**
     * Maps zeroed memory of at least {@code bytes} bytes, whole pages.
     *
     * @param bytes the size the caller needs
     * @return the memory; {@link #close} it when nothing refers to it any more
     * @throws IllegalStateException if the system refuses the mapping
     */
    static HostReleasableMemory map(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException(
                    "releasable memory needs a positive size, got " + bytes);
        }
        long mapped = (bytes + PAGE - 1) / PAGE * PAGE;
        Pointer base =
                LibC.INSTANCE.mmap(
                        null,
                        mapped,
                        LibC.PROT_READ | LibC.PROT_WRITE,
                        LibC.MAP_PRIVATE | LibC.MAP_ANONYMOUS,
                        -1,
                        0);
        if (base == null || Pointer.nativeValue(base) == -1) {
            throw new IllegalStateException(
                    "mmap of " + mapped + " bytes failed with errno " + Native.getLastError());
        }
        return new HostReleasableMemory(base, bytes, mapped);
    }

    @Override
    public NDArray wrap(NDManager manager, Shape shape, Precision precision, long byteOffset) {
        checkOpen();
        return BlobTensors.wrap(
                getAddress(), bytes, Device.cpu(), manager, shape, precision, byteOffset);
    }

    /**
     * Gives the physical pages back to the system; the addresses stay valid and read as zeros until
     * written again.
     */
    @Override
    public void release() {
        checkOpen();
        int error = LibC.INSTANCE.madvise(base, mapped, LibC.MADV_DONTNEED);
        if (error != 0) {
            throw new IllegalStateException("madvise failed with errno " + Native.getLastError());
        }
    }

    /** Does nothing: the first write into a released page backs it again. */
    @Override
    public void restore() {
        checkOpen();
    }

    /**
     * Returns how much of this memory is resident (in whole pages), as {@code mincore} reports.
     *
     * @return resident bytes, at most the mapped size
     */
    @Override
    public long getResidentBytes() {
        checkOpen();
        byte[] pages = new byte[(int) (mapped / PAGE)];
        if (LibC.INSTANCE.mincore(base, mapped, pages) != 0) {
            throw new IllegalStateException("mincore failed with errno " + Native.getLastError());
        }
        long resident = 0;
        for (byte page : pages) {
            resident += page & 1;
        }
        return resident * PAGE;
    }

    /**
     * Returns the address of the first byte: where collectives write.
     *
     * @return the address
     */
    @Override
    public long getAddress() {
        checkOpen();
        return Pointer.nativeValue(base);
    }

    /**
     * Returns the size asked for in {@link #map}.
     *
     * @return bytes
     */
    @Override
    public long getBytes() {
        return bytes;
    }

    /**
     * Returns a native-order direct buffer over the whole memory, for refilling it in place.
     *
     * @return the buffer, valid until {@link #close}
     */
    ByteBuffer getBuffer() {
        checkOpen();
        return base.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
    }

    /** Unmaps the memory; nothing made over it may be used afterwards. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            LibC.INSTANCE.munmap(base, mapped);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("releasable memory used after close()");
        }
    }
}
