package ai.djl.fsdp.tensor;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Host memory whose physical pages can be given back while tensors, views and autograd graphs still
 * refer to its addresses, and filled again in place: what FULL_SHARD needs to free a unit's
 * gathered parameters after forward without recomputing the unit in backward.
 *
 * <p>The memory is an anonymous private mapping this class makes itself ({@code mmap}), wrapped as
 * tensors with {@code aoti_torch_create_tensor_from_blob} (no deleter: libtorch never frees it).
 * {@link #release} is {@code madvise(MADV_DONTNEED)}: the kernel drops the pages at once (the
 * resident set falls by their size) but the addresses stay mapped, reading as zeros until written;
 * writing the gathered values into the same addresses ({@link #buffer}, {@link #address}: what an
 * all-gather into its output does) before backward brings them back, and every tensor that saved
 * them for backward reads the new values.
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
public final class ReleasableMemory implements AutoCloseable {

    private static final long PAGE = LibC.INSTANCE.sysconf(LibC.SC_PAGESIZE);

    private final Pointer base;
    private final long bytes;
    private final long mapped;
    private boolean closed;

    private ReleasableMemory(Pointer base, long bytes, long mapped) {
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
    public static ReleasableMemory map(long bytes) {
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
        return new ReleasableMemory(base, bytes, mapped);
    }

    /**
     * Returns a contiguous tensor over this memory (not a copy), owned by {@code manager}: closing
     * it leaves the memory mapped.
     *
     * @param manager the PyTorch-engine manager of the array, on the CPU
     * @param shape the shape
     * @param precision the element type
     * @param byteOffset where the first element lies, a multiple of the element size
     * @return the array
     * @throws IllegalArgumentException if the array would not fit
     */
    public NDArray wrap(NDManager manager, Shape shape, Precision precision, long byteOffset) {
        checkOpen();
        if (!(manager instanceof PtNDManager) || manager.getDevice().isGpu()) {
            throw new IllegalArgumentException(
                    "releasable memory is host memory: wrap it with a PyTorch-engine CPU manager");
        }
        long end = byteOffset + shape.size() * precision.getBytes();
        if (byteOffset < 0 || byteOffset % precision.getBytes() != 0 || end > bytes) {
            throw new IllegalArgumentException(
                    "a "
                            + precision.getName()
                            + " array of shape "
                            + shape
                            + " at byte "
                            + byteOffset
                            + " does not fit in "
                            + bytes
                            + " bytes of releasable memory");
        }
        long[] sizes = shape.getShape();
        long[] strides = new long[sizes.length];
        long stride = 1;
        for (int axis = sizes.length - 1; axis >= 0; axis--) {
            strides[axis] = stride;
            stride *= sizes[axis];
        }
        AotiTorch torch = AotiTorch.cpu();
        LongByReference tensor = new LongByReference();
        TensorMemory.check(
                torch.aoti_torch_create_tensor_from_blob(
                        base.share(byteOffset),
                        sizes.length,
                        sizes,
                        strides,
                        0,
                        precision.shimType(torch),
                        torch.aoti_torch_device_type_cpu(),
                        0,
                        tensor),
                "aoti_torch_create_tensor_from_blob");
        return new PtNDArray((PtNDManager) manager, tensor.getValue());
    }

    /**
     * Gives the physical pages back to the system; the addresses stay valid and read as zeros until
     * written again.
     */
    public void release() {
        checkOpen();
        int error = LibC.INSTANCE.madvise(base, mapped, LibC.MADV_DONTNEED);
        if (error != 0) {
            throw new IllegalStateException("madvise failed with errno " + Native.getLastError());
        }
    }

    /**
     * Returns how much of this memory is resident (in whole pages), as {@code mincore} reports.
     *
     * @return resident bytes, at most the mapped size
     */
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
    public long getAddress() {
        checkOpen();
        return Pointer.nativeValue(base);
    }

    /**
     * Returns the size asked for in {@link #map}.
     *
     * @return bytes
     */
    public long getBytes() {
        return bytes;
    }

    /**
     * Returns a native-order direct buffer over the whole memory, for refilling it in place.
     *
     * @return the buffer, valid until {@link #close}
     */
    public ByteBuffer getBuffer() {
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
