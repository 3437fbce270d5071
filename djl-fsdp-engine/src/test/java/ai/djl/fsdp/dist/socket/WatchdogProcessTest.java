package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.launch.RankFailedException;
import ai.djl.fsdp.testing.RankProcesses;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Real rank JVMs, real signals: a rank that is stopped (SIGSTOP) or killed (SIGKILL), the store's
 * host rank 0 included, ends the job within the timeout, every survivor naming it and the launcher
 * reporting it; a rank that is only busy for longer than the timeout does not. Each fault's time to
 * the job's end is printed as {@code MEASURED}, for docs/failures.md.
 */
class WatchdogProcessTest {

    /** Short, so the suite stays fast; the default is 60 seconds. */
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private static RankProcesses endlessJob(int worldSize) {
        RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(worldSize)
                        .args("endless")
                        .env(ProcessGroupOptions.TIMEOUT_VARIABLE, "5")
                        .timeout(Duration.ofMinutes(2))
                        .start();
        for (int rank = 0; rank < worldSize; rank++) {
            job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(90));
        }
        return job;
    }

    @ParameterizedTest(name = "SIG{1} of rank {0}")
    @CsvSource({"1, STOP", "0, STOP", "1, KILL", "0, KILL"})
    void faultyRankEndsTheJobWithinTheTimeoutNamingIt(int faulty, String signal)
            throws InterruptedException {
        try (RankProcesses job = endlessJob(3)) {
            long start = System.nanoTime();
            job.signal(faulty, signal);
            int survivor = faulty == 0 ? 1 : 0;
            while (job.isAlive(survivor) && System.nanoTime() - start < 60_000_000_000L) {
                Thread.sleep(20);
            }
            double exited = (System.nanoTime() - start) / 1e9;
            RankFailedException launcher = job.awaitLauncherFailure();
            double seconds = (System.nanoTime() - start) / 1e9;
            RankProcesses.Results results = job.await();
            System.out.printf(
                    "MEASURED SIG%s of rank %d of 3, timeout %s: rank %d exited after %.1f s,"
                            + " the launcher reported after %.1f s: %s%n",
                    signal, faulty, TIMEOUT, survivor, exited, seconds, launcher.getMessage());
            assertEquals(faulty, launcher.getRank(), launcher.getMessage());
            assertTrue(
                    launcher.getMessage().startsWith("rank " + faulty + " "),
                    launcher.getMessage());
            if ("KILL".equals(signal)) {
                assertTrue(launcher.getMessage().contains("SIGKILL"), launcher.getMessage());
            }
            assertTrue(
                    seconds < TIMEOUT.getSeconds() + 10,
                    "took " + seconds + " s:\n" + results.describe());
            for (int rank = 0; rank < 3; rank++) {
                if (rank == faulty) {
                    continue;
                }
                String output = results.rank(rank).output();
                assertTrue(
                        output.contains("FAILED: ")
                                && output.matches("(?s).*rank " + faulty + "\\b.*"),
                        "rank " + rank + " must blame rank " + faulty + ":\n" + results.describe());
                assertTrue(
                        output.contains(" in allReduce #"),
                        "the message names the collective:\n" + results.describe());
            }
        }
    }

    @Test
    void aStoppedRankEndsATwoRankJobWithinAMinuteWithTheDefaults() throws InterruptedException {
        // No timeout set: the heartbeat timeout's default (30 s) decides, as in a real job.
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(2)
                        .args("endless")
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            for (int rank = 0; rank < 2; rank++) {
                job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(90));
            }
            long start = System.nanoTime();
            job.signal(1, "STOP");
            RankFailedException launcher = job.awaitLauncherFailure();
            double seconds = (System.nanoTime() - start) / 1e9;
            RankProcesses.Results results = job.await();
            System.out.printf(
                    "MEASURED SIGSTOP of rank 1 of 2, default settings: the launcher reported"
                            + " after %.1f s: %s%n",
                    seconds, launcher.getMessage());
            assertEquals(1, launcher.getRank(), launcher.getMessage());
            assertTrue(launcher.getMessage().contains("stopped"), launcher.getMessage());
            assertTrue(
                    results.rank(0).output().contains("rank 1 has sent no heartbeat for PT30S"),
                    results.describe());
            assertTrue(seconds < 60, "took " + seconds + " s:\n" + results.describe());
        }
    }

    @Test
    void killedRankIsReportedBySignalName() {
        try (RankProcesses job = endlessJob(2)) {
            job.kill(1);
            RankFailedException launcher = job.awaitLauncherFailure();
            assertEquals(1, launcher.getRank());
            assertTrue(
                    launcher.getMessage().contains("rank 1 was killed by SIGKILL"),
                    launcher.getMessage());
        }
    }

    @Test
    void busyRankIsWaitedForPastTheTimeout() {
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(2)
                        .args("busy")
                        .env(ProcessGroupOptions.TIMEOUT_VARIABLE, "3")
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("SUM 2.0"), results.describe());
            }
        }
    }
}
