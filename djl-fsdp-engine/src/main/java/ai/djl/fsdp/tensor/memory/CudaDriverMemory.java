package ai.djl.fsdp.tensor.memory;

import ai.djl.Device;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.cuda.cudart.CUmemAccessDesc_v1;
import org.bytedeco.cuda.cudart.CUmemAllocationProp_v1;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.SizeTPointer;

/**
 * {@link CudaVirtualMemory} through the CUDA driver API of Bytedeco's {@code cudart} bindings
 * ({@code libjnicudart.so}, linked to {@code libcudart.so.12}, or {@code .13} with {@code
 * -Pcuda13}, and the driver's {@code libcuda.so.1}). Device-local, pinned (not migratable) physical
 * memory, readable and writable by its own GPU only. Each call first makes the GPU current on the
 * calling thread ({@code cudaSetDevice}, which also makes its primary context, the one libtorch
 * uses, current for the driver API), as the NCCL group does before each collective.
 */
final class CudaDriverMemory implements CudaVirtualMemory {

    /** One per GPU: its granularity is asked of the driver once, not at every allocation. */
    private static final Map<Integer, CudaDriverMemory> BY_DEVICE = new ConcurrentHashMap<>();

    private final Device device;
    private long granularity;

    private CudaDriverMemory(Device device) {
        this.device = device;
    }

    /**
     * Returns the driver calls for {@code device}, the same object for every call on one GPU.
     *
     * @param device a GPU
     * @return the calls
     * @throws UnsupportedOperationException naming what is missing when the CUDA libraries cannot
     *     be loaded
     */
    static CudaDriverMemory on(Device device) {
        CudaLibraries.Part.DRIVER
                .problem()
                .ifPresent(
                        problem -> {
                            throw new UnsupportedOperationException(problem);
                        });
        return BY_DEVICE.computeIfAbsent(device.getDeviceId(), id -> new CudaDriverMemory(device));
    }

    @Override
    public Device getDevice() {
        return device;
    }

    @Override
    public synchronized long granularity() {
        if (granularity == 0) {
            makeCurrent();
            try (CUmemAllocationProp_v1 prop = properties();
                    SizeTPointer minimum = new SizeTPointer(1)) {
                CudaStatus.driver(
                        cudart.cuMemGetAllocationGranularity(
                                minimum, prop, cudart.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                        "cuMemGetAllocationGranularity on " + device);
                granularity = minimum.get();
            }
        }
        return granularity;
    }

    @Override
    public long reserve(long size) {
        makeCurrent();
        long[] address = new long[1];
        CudaStatus.driver(
                cudart.cuMemAddressReserve(address, size, 0, 0, 0),
                "cuMemAddressReserve on " + device);
        return address[0];
    }

    @Override
    public long create(long size) {
        makeCurrent();
        long[] handle = new long[1];
        try (CUmemAllocationProp_v1 prop = properties()) {
            CudaStatus.driver(
                    cudart.cuMemCreate(handle, size, prop, 0), "cuMemCreate on " + device);
        }
        return handle[0];
    }

    @Override
    public void map(long address, long size, long handle) {
        makeCurrent();
        CudaStatus.driver(cudart.cuMemMap(address, size, 0, handle, 0), "cuMemMap on " + device);
        try (CUmemAccessDesc_v1 access = new CUmemAccessDesc_v1()) {
            access.location().type(cudart.CU_MEM_LOCATION_TYPE_DEVICE).id(device.getDeviceId());
            access.flags(cudart.CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
            CudaStatus.driver(
                    cudart.cuMemSetAccess(address, size, access, 1), "cuMemSetAccess on " + device);
        } catch (RuntimeException e) {
            cudart.cuMemUnmap(address, size);
            throw e;
        }
    }

    @Override
    public void synchronize() {
        makeCurrent();
        CudaRuntime.get()
                .check(
                        cudart.cudaStreamSynchronize(CudaRuntime.currentStream(device)),
                        "cudaStreamSynchronize on " + device);
    }

    @Override
    public void unmap(long address, long size) {
        makeCurrent();
        CudaStatus.driver(cudart.cuMemUnmap(address, size), "cuMemUnmap on " + device);
    }

    @Override
    public void release(long handle) {
        makeCurrent();
        CudaStatus.driver(cudart.cuMemRelease(handle), "cuMemRelease on " + device);
    }

    @Override
    public void free(long address, long size) {
        makeCurrent();
        CudaStatus.driver(cudart.cuMemAddressFree(address, size), "cuMemAddressFree on " + device);
    }

    private CUmemAllocationProp_v1 properties() {
        CUmemAllocationProp_v1 prop = new CUmemAllocationProp_v1();
        // JavaCPP does not zero native structs: the reserved fields and flags must be 0.
        prop.zero();
        prop.type(cudart.CU_MEM_ALLOCATION_TYPE_PINNED);
        prop.requestedHandleTypes(cudart.CU_MEM_HANDLE_TYPE_NONE);
        prop.location().type(cudart.CU_MEM_LOCATION_TYPE_DEVICE).id(device.getDeviceId());
        return prop;
    }

    private void makeCurrent() {
        CudaRuntime.get().setDevice(device.getDeviceId());
    }
}
