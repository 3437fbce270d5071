package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.dist.nccl.NcclProcessGroup;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * FULL_SHARD without recompute on 2 GPU ranks (NCCL, gpu(0) and gpu(1)): each unit's gathered
 * parameters live in CUDA virtual memory, unmapped after its forward and mapped again at the same
 * addresses for the gather before its backward. It trains as keeping the parameters until backward
 * does (SHARD_GRAD_OP without recompute: the same graphs over the same values), and after every
 * forward no unit has physical memory mapped, where SHARD_GRAD_OP keeps it. That the unmapped
 * memory really goes back to the device is {@code CudaReleasableMemoryGpuTest}'s check. Skips
 * without two GPUs (or one shared by two ranks, DJL_FSDP_RANKS_PER_GPU=2), NCCL or the CUDA driver
 * library.
 */
class ReshardWithoutRecomputeGpuTest {

    private static final int WORLD = 2;

    @Test
    void trainsAsKeepingTheParametersDoesWithTheUnitsUnmappedAfterForward(@TempDir Path directory)
            throws Exception {
        int gpus = Engine.getEngine("PyTorch").getGpuCount();
        int perGpu = RankDevice.ranksPerGpu(System.getenv(RankDevice.RANKS_PER_GPU_VARIABLE));
        Assumptions.assumeTrue(
                gpus * perGpu >= WORLD,
                "needs two CUDA GPUs (NCCL ranks on distinct GPUs), or one with"
                        + " DJL_FSDP_RANKS_PER_GPU=2, found "
                        + gpus);
        Assumptions.assumeTrue(
                NcclProcessGroup.isAvailable(),
                () -> CudaLibraries.Part.NCCL.problem().orElse("NCCL cannot run here"));
        Assumptions.assumeTrue(
                CudaLibraries.Part.DRIVER.problem().isEmpty(),
                () -> CudaLibraries.Part.DRIVER.problem().orElse(""));
        Scenario released =
                new Scenario(ShardingStrategy.FULL_SHARD, WORLD, 1, 0f, false, true, 3, 0f, "none");
        Scenario kept =
                new Scenario(ShardingStrategy.SHARD_GRAD_OP, WORLD, 1, 0f, false, true, 3, 0f);
        try (RankProcesses job =
                RankProcesses.builder(ScenarioRankMain.class)
                        .worldSize(WORLD)
                        .env(RankDevice.DEVICE_VARIABLE, "gpu")
                        .args(
                                directory.toString(),
                                ScenarioFiles.format(released),
                                ScenarioFiles.format(kept))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        // The noise of the same training on the CPU reference, against which both GPU runs agree.
        Equivalence.Bound bound = kept.noiseBound(kept.runReference());
        for (int rank = 0; rank < WORLD; rank++) {
            Scenario.Result withRelease = ScenarioFiles.read(directory.resolve("1-rank" + rank));
            Scenario.Result keeping = ScenarioFiles.read(directory.resolve("2-rank" + rank));
            Equivalence.assertSameTraining(
                    released.describe() + " against keeping the parameters, rank " + rank,
                    bound,
                    keeping.losses(),
                    withRelease.losses(),
                    keeping.parameters(),
                    withRelease.parameters());
            for (String units : withRelease.unitsAfterForward()) {
                assertEquals("RELEASED:0;RELEASED:0;RELEASED:0", units, "after forward");
            }
            for (String units : keeping.unitsAfterForward()) {
                for (String unit : List.of(units.split(";"))) {
                    assertTrue(unit.startsWith("GATHERED:"), units);
                    assertTrue(Long.parseLong(unit.substring("GATHERED:".length())) > 0, units);
                }
            }
        }
    }
}
