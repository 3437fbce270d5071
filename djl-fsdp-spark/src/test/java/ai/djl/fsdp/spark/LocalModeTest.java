package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under a {@code local[2]} master both tasks run in the driver's one executor: a JVM per rank
 * ({@code runMain}) trains there, and training in the executor's JVM ({@code run}) is refused on
 * the driver, naming the shared executor and the fix. Under {@code local[1]}, a run that waits for
 * task slots it will never get says so when it is interrupted.
 */
class LocalModeTest {

    private static SparkSession session(String master, Path out) {
        return SparkSession.builder()
                .appName("djl-fsdp-spark-local-test")
                .master(master)
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.sql.warehouse.dir", out.resolve("warehouse").toString())
                .getOrCreate();
    }

    @Test
    void rankJvmsTrainAndRanksInOneExecutorAreRefused(@TempDir Path out) throws Exception {
        SparkSession session = session("local[2]", out);
        try {
            FsdpDistributor distributor = FsdpDistributor.builder(session).setRanks(2).build();
            distributor.runMain(MlpRun.class.getName(), out.toString(), "2");
            assertEquals(2, Files.readAllLines(out.resolve("rank0")).size());
            assertEquals(2, Files.readAllLines(out.resolve("rank1")).size());

            // Refused on the driver, before a stage Spark would retry in vain.
            IllegalArgumentException refused =
                    assertThrows(IllegalArgumentException.class, () -> distributor.run(rank -> 0));
            assertTrue(
                    refused.getMessage()
                            .startsWith(
                                    "ranks 0 and 1 would run in the same executor (the driver's: a"
                                            + " local[2] master has no other), but a rank that"
                                            + " trains in the executor's JVM needs one of its own"),
                    refused.getMessage());
        } finally {
            session.stop();
        }
    }

    @Test
    void anInterruptedWaitForTaskSlotsSaysSoAndKeepsTheInterrupt(@TempDir Path out) {
        SparkSession session = session("local[1]", out);
        try {
            FsdpDistributor distributor =
                    FsdpDistributor.builder(session)
                            .setRanks(2)
                            .optSlotWait(Duration.ofMinutes(5))
                            .build();
            Thread.currentThread().interrupt();
            IllegalStateException failure =
                    assertThrows(
                            IllegalStateException.class,
                            () -> distributor.runMain(MlpRun.class.getName(), out.toString()));
            assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
            assertTrue(
                    failure.getMessage()
                            .startsWith(
                                    "interrupted while waiting for the cluster to run 2 tasks at"
                                            + " once (it could run 1 so far)"),
                    failure.getMessage());
        } finally {
            Thread.interrupted();
            session.stop();
        }
    }
}
