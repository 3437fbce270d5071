package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** On machines without a GPU the NCCL backend must load, say it is unavailable and explain why. */
class NcclAvailabilityTest {

    @Test
    void withoutAGpuNcclIsUnavailableWithAnExplanation() {
        Assumptions.assumeTrue(
                Engine.getEngine("PyTorch").getGpuCount() == 0,
                "a GPU is present: see NcclProcessGroupTest");

        assertFalse(NcclProcessGroup.isAvailable());
        UnsupportedOperationException error =
                assertThrows(
                        UnsupportedOperationException.class,
                        () ->
                                NcclProcessGroup.create(
                                        DistributedEnv.single(""),
                                        null,
                                        Device.gpu(0),
                                        ProcessGroupOptions.defaults()));
        assertTrue(error.getMessage().contains("-Pcuda"), error.getMessage());
    }

    @Test
    void aCpuDeviceIsRejected() {
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        NcclProcessGroup.create(
                                DistributedEnv.single(""),
                                null,
                                Device.cpu(),
                                ProcessGroupOptions.defaults()));
    }
}
