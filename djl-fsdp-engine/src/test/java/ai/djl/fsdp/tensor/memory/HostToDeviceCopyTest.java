package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The non-blocking copy of a pinned host array to a GPU (CPU offload's gather input). */
class HostToDeviceCopyTest {

    @Test
    void onlyHostToGpuIsACopyHere() {
        try (NDManager cpu = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray a = cpu.ones(new Shape(4));
            IllegalArgumentException error =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> HostToDeviceCopy.start(a, cpu.zeros(new Shape(4))));
            assertTrue(error.getMessage().contains("from the CPU to a GPU"), error.getMessage());
        }
    }

    @Test
    void theCopiedValuesAreThereAndTheSourceIsFreeAfterAwait() {
        Assumptions.assumeTrue(
                Engine.getEngine("PyTorch").getGpuCount() > 0,
                "no CUDA GPU is visible to libtorch: the host-to-device copy needs one");
        try (NDManager cpu = NDManager.newBaseManager(Device.cpu(), "PyTorch");
                NDManager gpu = NDManager.newBaseManager(Device.gpu(), "PyTorch")) {
            NDArray source = cpu.arange(1 << 20).toType(DataType.FLOAT32, false);
            float[] expected = source.toFloatArray();
            try (PinnedMemory pinned = PinnedMemory.pin(source)) {
                NDArray target = Precision.FLOAT32.empty(gpu, source.getShape());
                try (HostToDeviceCopy copy = HostToDeviceCopy.start(source, target)) {
                    NDArray doubled = target.mul(2);
                    copy.await();
                    source.muli(0);
                    assertArrayEquals(expected, target.toFloatArray());
                    assertArrayEquals(doubled.toFloatArray(), target.mul(2).toFloatArray());
                }
            }
        }
    }
}
