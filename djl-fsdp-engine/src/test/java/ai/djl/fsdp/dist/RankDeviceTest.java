package ai.djl.fsdp.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import org.junit.jupiter.api.Test;

/** The device choice with the GPU count given, so that it runs on machines without GPUs. */
class RankDeviceTest {

    @Test
    void eachLocalRankTakesItsOwnGpu() {
        assertEquals(Device.gpu(0), RankDevice.select(0, 4, 4, null, 1));
        assertEquals(Device.gpu(3), RankDevice.select(3, 4, 8, "", 1));
        assertEquals(Device.gpu(1), RankDevice.select(1, 2, 2, "gpu", 1));
    }

    @Test
    void withoutGpusEveryRankTakesTheCpu() {
        assertEquals(Device.cpu(), RankDevice.select(0, 2, 0, null, 1));
        assertEquals(Device.cpu(), RankDevice.select(1, 2, 0, "auto", 1));
    }

    @Test
    void theVariableKeepsAGpuHostOnTheCpu() {
        assertEquals(Device.cpu(), RankDevice.select(1, 2, 2, "CPU", 1));
    }

    @Test
    void oneVisibleGpuPerProcessIsThatProcesssGpu() {
        // CUDA_VISIBLE_DEVICES set per task: every rank sees its GPU as gpu(0).
        assertEquals(Device.gpu(0), RankDevice.select(3, 4, 1, null, 1));
    }

    @Test
    void moreRanksThanGpusIsRefusedWithTheFix() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class, () -> RankDevice.select(2, 3, 2, null, 1));
        assertTrue(e.getMessage().contains("LOCAL_RANK=2"), e.getMessage());
        assertTrue(e.getMessage().contains("--nproc-per-node 2"), e.getMessage());
    }

    @Test
    void ranksPerGpuPutsLocalRankROnGpuROverK() {
        // --ranks-per-gpu 2 on one GPU: both ranks on gpu(0); 4 ranks on 2 GPUs: 0 0 1 1.
        assertEquals(Device.gpu(0), RankDevice.select(1, 2, 1, null, 2));
        int[] expected = {0, 0, 1, 1};
        for (int rank = 0; rank < 4; rank++) {
            assertEquals(Device.gpu(expected[rank]), RankDevice.select(rank, 4, 2, "gpu", 2));
        }
        // 4 ranks at 2 per GPU on one GPU: ranks 2 and 3 have none.
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class, () -> RankDevice.select(2, 4, 1, null, 2));
        assertTrue(e.getMessage().contains("at 2 ranks per GPU"), e.getMessage());
        assertTrue(e.getMessage().contains("--nproc-per-node 2"), e.getMessage());
        // The CPU stays the CPU.
        assertEquals(Device.cpu(), RankDevice.select(3, 4, 0, null, 2));
    }

    @Test
    void theRanksPerGpuVariableIsAWholeNumberOfAtLeastOne() {
        assertEquals(1, RankDevice.ranksPerGpu(null));
        assertEquals(1, RankDevice.ranksPerGpu(" "));
        assertEquals(2, RankDevice.ranksPerGpu(" 2"));
        for (String bad : new String[] {"0", "-1", "two", "1.5"}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> RankDevice.ranksPerGpu(bad));
            assertTrue(
                    e.getMessage().contains(RankDevice.RANKS_PER_GPU_VARIABLE + "='" + bad + "'"),
                    e.getMessage());
        }
    }

    @Test
    void askingForAGpuWithoutOneOrAnUnknownKindIsRefused() {
        IllegalArgumentException none =
                assertThrows(
                        IllegalArgumentException.class, () -> RankDevice.select(0, 1, 0, "gpu", 1));
        assertTrue(none.getMessage().contains("-Pcuda"), none.getMessage());
        IllegalArgumentException unknown =
                assertThrows(
                        IllegalArgumentException.class, () -> RankDevice.select(0, 1, 0, "tpu", 1));
        assertTrue(unknown.getMessage().contains(RankDevice.DEVICE_VARIABLE + "='tpu'"));
    }

    @Test
    void djlsDefaultDeviceListGivesWayToTheRanksDevice() {
        Device[] everyGpu = {Device.gpu(0), Device.gpu(1), Device.gpu(2)};
        assertEquals(Device.gpu(2), RankDevice.forTraining(everyGpu, everyGpu, Device.gpu(2)));
        // DJL_FSDP_DEVICE=cpu on a GPU host: the default list names GPUs, the rank trains on the
        // CPU.
        assertEquals(Device.cpu(), RankDevice.forTraining(everyGpu, everyGpu, Device.cpu()));
        assertEquals(Device.gpu(1), RankDevice.forTraining(null, everyGpu, Device.gpu(1)));
        assertEquals(Device.gpu(1), RankDevice.forTraining(new Device[0], everyGpu, Device.gpu(1)));
    }

    @Test
    void anExplicitDeviceMustBeTheRanks() {
        Device[] defaults = {Device.gpu(0), Device.gpu(1)};
        assertEquals(
                Device.gpu(1),
                RankDevice.forTraining(new Device[] {Device.gpu(1)}, defaults, Device.gpu(1)));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                RankDevice.forTraining(
                                        new Device[] {Device.cpu()}, defaults, Device.gpu(1)));
        assertTrue(e.getMessage().contains("leave optDevices unset"), e.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        RankDevice.forTraining(
                                new Device[] {Device.gpu(0), Device.gpu(1)},
                                new Device[] {Device.gpu(0), Device.gpu(1), Device.gpu(2)},
                                Device.gpu(1)));
    }

    @Test
    void onThisMachineTheRankDeviceMatchesWhatPytorchSees() {
        Device device = RankDevice.of(DistributedEnv.single(""));
        int gpus = ai.djl.engine.Engine.getEngine("PyTorch").getGpuCount();
        String requested = System.getenv(RankDevice.DEVICE_VARIABLE);
        boolean cpuRequested = requested != null && requested.trim().equalsIgnoreCase("cpu");
        assertEquals(gpus == 0 || cpuRequested ? Device.cpu() : Device.gpu(0), device);
    }
}
