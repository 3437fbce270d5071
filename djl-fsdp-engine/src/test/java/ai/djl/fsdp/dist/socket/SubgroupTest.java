package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.launch.RankFailedException;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Subgroups of the socket ring on 4 rank processes on loopback, split as 2 shard groups of 2 and 2
 * replicate groups ({@link SubgroupMain}).
 */
class SubgroupTest {

    @Test
    void subgroupsRunEveryCollectiveBesideTheJobsGroup() {
        try (RankProcesses job =
                RankProcesses.builder(SubgroupMain.class)
                        .worldSize(4)
                        .args("check")
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("OK rank "), results.describe());
            }
        }
    }

    /**
     * A stopped rank sends no heartbeat: the job's watchdog finds it and fails every subgroup's
     * collective in flight, whose message names the rank and the subgroup, within the timeout.
     */
    @Test
    void stoppedRankInAReplicateGroupEndsTheJobNamingRankAndSubgroup() throws InterruptedException {
        int timeoutSeconds = 5;
        try (RankProcesses job =
                RankProcesses.builder(SubgroupMain.class)
                        .worldSize(4)
                        .args("endless")
                        .env(ProcessGroupOptions.TIMEOUT_VARIABLE, Integer.toString(timeoutSeconds))
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            for (int rank = 0; rank < 4; rank++) {
                job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(90));
            }
            long start = System.nanoTime();
            job.signal(3, "STOP");
            RankFailedException launcher = job.awaitLauncherFailure();
            double seconds = (System.nanoTime() - start) / 1e9;
            RankProcesses.Results results = job.await();
            System.out.printf(
                    "MEASURED SIGSTOP of rank 3 of 4 in a replicate group, timeout %d s: the"
                            + " launcher reported after %.1f s: %s%n",
                    timeoutSeconds, seconds, launcher.getMessage());
            assertEquals(3, launcher.getRank(), launcher.getMessage() + results.describe());
            assertTrue(seconds < timeoutSeconds + 10, "took " + seconds + " s");
            String partner = results.rank(1).output();
            assertTrue(
                    partner.contains("FAILED: ")
                            && partner.contains("subgroup replicate 1 (ranks 1, 3)")
                            && partner.matches("(?s).*rank 3\\b.*"),
                    "rank 1 must name rank 3 and its subgroup:\n" + results.describe());
        }
    }
}
