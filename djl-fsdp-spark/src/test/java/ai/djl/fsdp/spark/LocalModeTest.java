package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under a {@code local[2]} master both tasks run in the driver's one executor: a JVM per rank
 * ({@code runMain}) trains there, and training in the executor's JVM ({@code run}) is refused on
 * the driver, naming the shared executor and the fix.
 */
class LocalModeTest {

    @Test
    void rankJvmsTrainAndRanksInOneExecutorAreRefused(@TempDir Path out) throws Exception {
        SparkSession session =
                SparkSession.builder()
                        .appName("djl-fsdp-spark-local-test")
                        .master("local[2]")
                        .config("spark.ui.enabled", "false")
                        .config("spark.driver.host", "127.0.0.1")
                        .config("spark.sql.warehouse.dir", out.resolve("warehouse").toString())
                        .getOrCreate();
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
}
