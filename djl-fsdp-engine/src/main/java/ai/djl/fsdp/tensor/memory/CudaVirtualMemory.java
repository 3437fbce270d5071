package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;

/**
 * The CUDA driver's virtual memory management for one GPU, as {@link CudaReleasableMemory} uses it:
 * address ranges reserved apart from the physical memory mapped into them. Every call throws an
 * {@link IllegalStateException} naming the driver function and its {@code CUresult} when the driver
 * refuses. An interface so that the order of the calls is checked on machines without a GPU.
 */
interface CudaVirtualMemory {

    /** Returns the GPU. */
    Device getDevice();

    /** Returns the granularity physical memory is created and mapped in, in bytes. */
    long granularity();

    /**
     * Reserves {@code size} bytes of addresses (a multiple of the granularity); returns the first.
     */
    long reserve(long size);

    /** Creates {@code size} bytes of physical memory on the GPU; returns its handle. */
    long create(long size);

    /**
     * Maps the physical memory {@code handle} at {@code address} and makes it readable and
     * writable.
     */
    void map(long address, long size, long handle);

    /**
     * Waits until everything queued on the GPU's current stream (libtorch's, where DJL's operators
     * run) is done: unmapping does not wait for kernels still queued to read the memory.
     */
    void synchronize();

    /** Unmaps what is mapped at {@code address}; the addresses stay reserved. */
    void unmap(long address, long size);

    /** Releases the handle of physical memory; the memory is freed once it is not mapped. */
    void release(long handle);

    /** Frees a reservation, all of it unmapped. */
    void free(long address, long size);
}
