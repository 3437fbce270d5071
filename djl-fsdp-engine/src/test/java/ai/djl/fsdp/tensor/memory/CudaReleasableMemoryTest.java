package ai.djl.fsdp.tensor.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The order of the CUDA driver calls behind GPU releasable memory, checked without a GPU against a
 * driver that records them: addresses reserved once in whole granules, physical memory mapped, the
 * stream synchronized before every unmap, fresh memory mapped at the same address by restore, and
 * nothing left reserved or mapped after close or after a failure.
 */
class CudaReleasableMemoryTest {

    private static final long GRANULE = 2 << 20;
    private static final long BASE = 0x7f0000000000L;

    @Test
    void releaseSynchronizesThenUnmapsAndRestoreMapsAtTheSameAddress() {
        RecordingDriver driver = new RecordingDriver();
        CudaReleasableMemory memory = CudaReleasableMemory.reserve(driver, 3 * GRANULE + 1);
        long size = 4 * GRANULE;
        assertEquals(
                List.of("reserve " + size, "create " + size + " -> 1", "map " + BASE + " 1"),
                driver.calls);
        assertEquals(BASE, memory.getAddress());
        assertEquals(3 * GRANULE + 1, memory.getBytes());
        assertEquals(size, memory.getResidentBytes());
        driver.calls.clear();

        memory.release();
        memory.release();
        assertEquals(List.of("synchronize", "unmap " + BASE, "release 1"), driver.calls);
        assertEquals(0, memory.getResidentBytes());
        assertEquals(BASE, memory.getAddress(), "the addresses stay");
        driver.calls.clear();

        memory.restore();
        memory.restore();
        assertEquals(List.of("create " + size + " -> 2", "map " + BASE + " 2"), driver.calls);
        assertEquals(size, memory.getResidentBytes());
        driver.calls.clear();

        memory.close();
        memory.close();
        assertEquals(
                List.of("synchronize", "unmap " + BASE, "release 2", "free " + BASE), driver.calls);
        assertThrows(IllegalStateException.class, memory::restore);
        assertThrows(IllegalStateException.class, memory::getAddress);
    }

    @Test
    void closingReleasedMemoryOnlyFreesTheAddresses() {
        RecordingDriver driver = new RecordingDriver();
        CudaReleasableMemory memory = CudaReleasableMemory.reserve(driver, 10);
        memory.release();
        driver.calls.clear();
        memory.close();
        assertEquals(List.of("free " + BASE), driver.calls);
    }

    @Test
    void aFailedMapLeavesNothingBehind() {
        RecordingDriver driver = new RecordingDriver();
        driver.failMap = true;
        IllegalStateException error =
                assertThrows(
                        IllegalStateException.class,
                        () -> CudaReleasableMemory.reserve(driver, GRANULE));
        assertTrue(error.getMessage().contains("CUDA_ERROR_OUT_OF_MEMORY"), error.getMessage());
        assertEquals(
                List.of(
                        "reserve " + GRANULE,
                        "create " + GRANULE + " -> 1",
                        "release 1",
                        "free " + BASE),
                driver.calls);
    }

    @Test
    void aFailedSynchronizeStillUnmapsAndFreesAndKeepsTheFirstError() {
        RecordingDriver driver = new RecordingDriver();
        CudaReleasableMemory memory = CudaReleasableMemory.reserve(driver, GRANULE);
        driver.calls.clear();
        driver.failSynchronize = true;
        driver.failFree = true;
        IllegalStateException error = assertThrows(IllegalStateException.class, memory::close);
        assertTrue(error.getMessage().startsWith("cuCtxSynchronize"), error.getMessage());
        assertEquals(1, error.getSuppressed().length);
        assertTrue(
                error.getSuppressed()[0].getMessage().startsWith("cuMemAddressFree"),
                error.getSuppressed()[0].getMessage());
        assertEquals(List.of("unmap " + BASE, "release 1", "free " + BASE), driver.calls);
        memory.close();
        assertEquals(3, driver.calls.size(), "a second close does nothing");
    }

    @Test
    void aFailedRestoreKeepsTheMemoryReleasedAndRetriable() {
        RecordingDriver driver = new RecordingDriver();
        CudaReleasableMemory memory = CudaReleasableMemory.reserve(driver, GRANULE);
        memory.release();
        driver.failMap = true;
        assertThrows(IllegalStateException.class, memory::restore);
        assertEquals(0, memory.getResidentBytes());
        driver.failMap = false;
        memory.restore();
        assertEquals(GRANULE, memory.getResidentBytes());
        memory.close();
    }

    @Test
    void releasedMemoryIsNotWrappedAndAManagerOnAnotherDeviceIsRefused() {
        RecordingDriver driver = new RecordingDriver();
        try (CudaReleasableMemory memory = CudaReleasableMemory.reserve(driver, GRANULE);
                NDManager cpu = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            IllegalArgumentException wrongDevice =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> memory.wrap(cpu, new Shape(4), Precision.FLOAT32, 0));
            assertTrue(wrongDevice.getMessage().contains("gpu(0)"), wrongDevice.getMessage());
            memory.release();
            assertThrows(
                    IllegalStateException.class,
                    () -> memory.wrap(cpu, new Shape(4), Precision.FLOAT32, 0));
        }
    }

    @Test
    void theFactoryPicksByDeviceAndNamesWhatIsMissing() {
        try (ReleasableMemory host = ReleasableMemory.allocate(Device.cpu(), 100)) {
            assertInstanceOf(HostReleasableMemory.class, host);
        }
        IllegalArgumentException other =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ReleasableMemory.allocate(Device.of("tpu", 0), 100));
        assertTrue(other.getMessage().contains("tpu"), other.getMessage());
        Assumptions.assumeTrue(
                Engine.getEngine("PyTorch").getGpuCount() == 0,
                "a GPU is here: nothing is missing");
        UnsupportedOperationException missing =
                assertThrows(
                        UnsupportedOperationException.class,
                        () -> ReleasableMemory.allocate(Device.gpu(), 100));
        assertTrue(
                missing.getMessage().startsWith("CUDA virtual memory is not available"),
                missing.getMessage());
    }

    /** Hands out addresses and handles and records every call. */
    private static final class RecordingDriver implements CudaVirtualMemory {

        final List<String> calls = new ArrayList<>();
        boolean failMap;
        boolean failSynchronize;
        boolean failFree;
        private long handles;

        @Override
        public Device getDevice() {
            return Device.gpu(0);
        }

        @Override
        public long granularity() {
            return GRANULE;
        }

        @Override
        public long reserve(long size) {
            calls.add("reserve " + size);
            return BASE;
        }

        @Override
        public long create(long size) {
            calls.add("create " + size + " -> " + ++handles);
            return handles;
        }

        @Override
        public void map(long address, long size, long handle) {
            if (failMap) {
                throw new IllegalStateException(
                        "cuMemMap on gpu(0) failed: CUDA_ERROR_OUT_OF_MEMORY");
            }
            calls.add("map " + address + " " + handle);
        }

        @Override
        public void synchronize() {
            if (failSynchronize) {
                throw new IllegalStateException(
                        "cuCtxSynchronize on gpu(0) failed: CUDA_ERROR_ILLEGAL_ADDRESS");
            }
            calls.add("synchronize");
        }

        @Override
        public void unmap(long address, long size) {
            calls.add("unmap " + address);
        }

        @Override
        public void release(long handle) {
            calls.add("release " + handle);
        }

        @Override
        public void free(long address, long size) {
            calls.add("free " + address);
            if (failFree) {
                throw new IllegalStateException(
                        "cuMemAddressFree on gpu(0) failed: CUDA_ERROR_INVALID_VALUE");
            }
        }
    }
}
