package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/**
 * Memory whose physical backing can be given back while tensors, views and autograd graphs still
 * refer to its addresses, and brought back at the same addresses: what FULL_SHARD needs to free a
 * unit's gathered parameters after forward without recomputing the unit in backward. The addresses
 * are fixed for the memory's whole life, so every tensor made over it by {@link #wrap}, and every
 * graph that saved such a tensor for backward, reads whatever was last written there.
 *
 * <p>The life of a gathered buffer: {@link #allocate} (backed, contents undefined), a gather writes
 * it, forward reads it, {@link #release} (the backing is gone), {@link #restore} (fresh backing at
 * the same addresses, contents undefined) before the next gather is queued, that gather writes it,
 * backward reads it, {@link #close}. Two implementations: {@link HostReleasableMemory} (the CPU, an
 * anonymous mapping whose pages are dropped, where {@link #restore} has nothing to do) and {@link
 * CudaReleasableMemory} (a GPU, the CUDA driver's virtual memory management).
 *
 * <p>Refill it only through the raw memory, as collectives do: libtorch's in-place operators would
 * bump the tensors' version counters and the saved graphs would refuse to run backward.
 */
public interface ReleasableMemory extends AutoCloseable {

    /**
     * Allocates backed releasable memory of at least {@code bytes} bytes on {@code device}.
     *
     * @param device the CPU or a GPU
     * @param bytes the size the caller needs
     * @return the memory; {@link #close} it when nothing refers to it any more
     * @throws IllegalArgumentException for a device that is neither the CPU nor a GPU
     * @throws UnsupportedOperationException on a GPU where the CUDA libraries it needs are missing,
     *     naming the missing piece
     */
    static ReleasableMemory allocate(Device device, long bytes) {
        if (device.isGpu()) {
            return CudaReleasableMemory.reserve(CudaDriverMemory.on(device), bytes);
        }
        if (Device.Type.CPU.equals(device.getDeviceType())) {
            return HostReleasableMemory.map(bytes);
        }
        throw new IllegalArgumentException(
                "releasable memory exists on the CPU and on CUDA GPUs, not on " + device);
    }

    /**
     * Returns a contiguous tensor over this memory (not a copy), owned by {@code manager}: closing
     * it leaves the memory as it is. The memory must be backed (not released) when it is called.
     *
     * @param manager a PyTorch-engine manager on this memory's device
     * @param shape the shape
     * @param precision the element type
     * @param byteOffset where the first element lies, a multiple of the element size
     * @return the array
     * @throws IllegalArgumentException if the manager is on another device or the array would not
     *     fit
     */
    NDArray wrap(NDManager manager, Shape shape, Precision precision, long byteOffset);

    /**
     * Gives the physical backing back; the addresses stay reserved. Does nothing if released.
     *
     * @throws IllegalStateException if the system refuses
     */
    void release();

    /**
     * Backs the addresses again, contents undefined, before anything writes them; does nothing
     * while backed.
     *
     * @throws IllegalStateException if the system refuses (out of memory)
     */
    void restore();

    /**
     * Returns how many bytes of physical memory back this memory now.
     *
     * @return 0 when released, at most the rounded-up size
     */
    long getResidentBytes();

    /**
     * Returns the address of the first byte: where collectives write.
     *
     * @return the address, the same for the memory's whole life
     */
    long getAddress();

    /**
     * Returns the size asked for in {@link #allocate}.
     *
     * @return bytes
     */
    long getBytes();

    /** Frees the memory and its addresses; nothing made over it may be used afterwards. */
    @Override
    void close();
}
