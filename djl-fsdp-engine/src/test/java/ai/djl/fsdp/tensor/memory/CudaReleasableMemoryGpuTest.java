package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * GPU releasable memory on gpu(0), as FULL_SHARD without recompute uses it: a graph built over the
 * memory survives its release (the device's free memory grows by the mapped size) and, once the
 * memory is restored and refilled at the same address, gives the gradients it gives without the
 * release. Skips without a GPU or without the CUDA libraries.
 */
class CudaReleasableMemoryGpuTest {

    private static final int IN = 1024;
    private static final int OUT = 4096;

    @Test
    void releasedRestoredAndRefilledParametersGiveTheSameGradients() {
        Assumptions.assumeTrue(
                Engine.getEngine("PyTorch").getGpuCount() > 0,
                "no CUDA GPU is visible to libtorch: GPU releasable memory needs one (-Pcuda on a"
                        + " GPU host)");
        Assumptions.assumeTrue(
                CudaLibraries.Part.DRIVER.problem().isEmpty(),
                () -> CudaLibraries.Part.DRIVER.problem().orElse(""));
        Device gpu = Device.gpu(0);
        try (NDManager manager = NDManager.newBaseManager(gpu, "PyTorch");
                ReleasableMemory memory =
                        ReleasableMemory.allocate(gpu, (long) IN * OUT * Float.BYTES)) {
            manager.getEngine().setRandomSeed(5);
            NDArray x = manager.randomNormal(new Shape(8, IN));
            float[] weights = manager.randomNormal(new Shape((long) IN * OUT)).toFloatArray();
            float[][] reference = gradients(manager, memory, x, weights, false);
            float[][] released = gradients(manager, memory, x, weights, true);
            assertArrayEquals(reference[0], released[0], 1e-6f, "input gradient");
            assertArrayEquals(reference[1], released[1], 1e-6f, "parameter gradient");
        }
    }

    private static float[][] gradients(
            NDManager manager,
            ReleasableMemory memory,
            NDArray x,
            float[] weights,
            boolean release) {
        return ReleasedGraphs.gradients(
                manager,
                memory,
                x,
                OUT,
                () -> fill(memory, weights),
                () -> {
                    if (release) {
                        long before = freeDeviceBytes();
                        memory.release();
                        assertEquals(0, memory.getResidentBytes());
                        long freed = freeDeviceBytes() - before;
                        assertTrue(
                                freed >= memory.getBytes(),
                                "the device got back " + freed + " of " + memory.getBytes());
                        long address = memory.getAddress();
                        memory.restore();
                        assertEquals(address, memory.getAddress());
                        fill(memory, weights);
                    }
                });
    }

    /** Writes the weights through the raw device memory, as an all-gather does. */
    private static void fill(ReleasableMemory memory, float[] weights) {
        try (FloatPointer host = new FloatPointer(weights)) {
            int result =
                    cudart.cudaMemcpy(
                            new DevicePointer(memory.getAddress()),
                            host,
                            (long) weights.length * Float.BYTES,
                            cudart.cudaMemcpyHostToDevice);
            assertEquals(cudart.cudaSuccess, result, "cudaMemcpy");
        }
    }

    private static long freeDeviceBytes() {
        try (SizeTPointer free = new SizeTPointer(1);
                SizeTPointer total = new SizeTPointer(1)) {
            assertEquals(cudart.cudaSuccess, cudart.cudaMemGetInfo(free, total), "cudaMemGetInfo");
            return free.get();
        }
    }
}
