package ai.djl.fsdp.dist.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.dist.socket.CollectiveCheckMain;
import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.launch.RankFailedException;
import ai.djl.fsdp.rendezvous.TcpStore;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The socket backend's multi-process checks run again on NCCL, one rank per GPU (at most two, three
 * where there are three), skipped with the reason where NCCL cannot run: a rank stopped with
 * SIGSTOP ends the job within a minute at the default heartbeat timeout (30 s), found by the
 * heartbeats (its time printed as {@code MEASURED}); and, on any machine, communicators set up in
 * turn through one store do not share a unique id.
 */
class NcclProcessGroupTest {

    @Test
    void eachCommunicatorOnAStoreGetsItsOwnUniqueIdKey() {
        try (TcpStore store =
                TcpStore.builder("127.0.0.1", 0).optHostServer(true).optToken("t").build()) {
            List<String> keys = new ArrayList<>();
            // Two communicators of three ranks, joined in turn.
            for (int join = 0; join < 6; join++) {
                keys.add(NcclUniqueIds.uniqueIdKey(store, 3));
            }
            String first = NcclUniqueIds.UNIQUE_ID_KEY_PREFIX + 0;
            String second = NcclUniqueIds.UNIQUE_ID_KEY_PREFIX + 1;
            assertEquals(List.of(first, first, first, second, second, second), keys);
        }
    }

    @Test
    void everyCollectiveGivesTheExpectedValuesOnGpus() {
        int ranks = gpuRanks(2);
        try (RankProcesses job = onGpus(NcclRankCheck.class, ranks).start()) {
            job.await().assertAllSucceeded();
        }
    }

    @Test
    void theSocketBackendsCollectiveChecksPassOnNccl() {
        int ranks = gpuRanks(3);
        try (RankProcesses job =
                onGpus(CollectiveCheckMain.class, ranks).timeout(Duration.ofMinutes(4)).start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("OK "), results.describe());
            }
        }
    }

    @Test
    void aSilentRankMakesTheWatchdogAbortTheOthersNamingRankAndCollective() {
        int ranks = gpuRanks(3);
        try (RankProcesses job =
                onGpus(FailureMain.class, ranks)
                        .args("silent")
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            job.awaitOutput(0, "FAILED: ", Duration.ofSeconds(120));
            job.kill(1);
            RankProcesses.Results results = job.await();
            String output = results.rank(0).output();
            assertEquals(FailureMain.FAILED_EXIT, results.rank(0).exitCode(), results.describe());
            assertTrue(output.contains("NCCL communicator aborted"), results.describe());
            assertTrue(output.contains("on rank 0"), results.describe());
            assertTrue(output.contains("allReduce #"), results.describe());
        }
    }

    @Test
    void
            aStoppedRankEndsATwoRankJobWithinAMinuteAtTheDefaultHeartbeatTimeoutNamingRankAndCollective()
                    throws InterruptedException {
        // FailureMain sets the timeout and the collective timeout (90 s); the heartbeat timeout is
        // left at its default (30 s), which is what finds the stop.
        int ranks = gpuRanks(2);
        try (RankProcesses job =
                onGpus(FailureMain.class, ranks)
                        .args("endless")
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            for (int rank = 0; rank < ranks; rank++) {
                job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(120));
            }
            long start = System.nanoTime();
            job.signal(1, "STOP");
            job.awaitOutput(0, "FAILED: ", Duration.ofSeconds(90));
            double failed = (System.nanoTime() - start) / 1e9;
            RankFailedException launcher = job.awaitLauncherFailure();
            double seconds = (System.nanoTime() - start) / 1e9;
            RankProcesses.Results results = job.await();
            String output = results.rank(0).output();
            System.out.printf(
                    "MEASURED SIGSTOP of rank 1 of %d on NCCL, default heartbeat timeout (30 s):"
                            + " rank 0 failed"
                            + " after %.1f s, the launcher reported after %.1f s (target: under"
                            + " 60 s): %s%n",
                    ranks, failed, seconds, launcher.getMessage());
            assertEquals(FailureMain.FAILED_EXIT, results.rank(0).exitCode(), results.describe());
            assertTrue(
                    output.contains("NCCL communicator aborted on rank 0 in allReduce #"),
                    results.describe());
            assertTrue(
                    output.contains("rank 1 has sent no heartbeat for PT30S"), results.describe());
            assertEquals(1, launcher.getRank(), launcher.getMessage());
            assertTrue(seconds < 60, "took " + seconds + " s:\n" + results.describe());
        }
    }

    @Test
    void aKilledRankFailsTheSurvivorsInsteadOfHangingThem() {
        int ranks = gpuRanks(2);
        try (RankProcesses job =
                onGpus(FailureMain.class, ranks)
                        .args("endless")
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            for (int rank = 0; rank < ranks; rank++) {
                job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(120));
            }
            job.kill(1);
            RankProcesses.Results results = job.await();
            assertEquals(FailureMain.FAILED_EXIT, results.rank(0).exitCode(), results.describe());
            assertTrue(
                    results.rank(0).output().contains("NCCL communicator aborted"),
                    results.describe());
        }
    }

    /** Returns how many GPU ranks to start, at most {@code wanted}, or skips with the reason. */
    private static int gpuRanks(int wanted) {
        int gpus = Engine.getEngine("PyTorch").getGpuCount();
        Assumptions.assumeTrue(gpus > 0, "no CUDA device: the NCCL backend needs a GPU");
        Assumptions.assumeTrue(
                NcclProcessGroup.isAvailable(),
                () -> CudaLibraries.Part.NCCL.problem().orElse("NCCL cannot run here"));
        int slots = gpus * RankDevice.ranksPerGpu(System.getenv(RankDevice.RANKS_PER_GPU_VARIABLE));
        Assumptions.assumeTrue(
                slots >= 2,
                "one GPU: NCCL collectives need two ranks, on two GPUs or sharing one"
                        + " (DJL_FSDP_RANKS_PER_GPU=2)");
        return Math.min(wanted, slots);
    }

    private static RankProcesses.Builder onGpus(Class<?> main, int ranks) {
        return RankProcesses.builder(main)
                .worldSize(ranks)
                .env(RankDevice.DEVICE_VARIABLE, "gpu")
                .jvmOptions("-Xmx1g");
    }
}
