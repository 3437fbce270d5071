package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** When ranks that train in the executor's JVM would share one, on the driver and in the stage. */
class OwnExecutorsTest {

    @Test
    void ranksInOneExecutorAreRefusedNamingThemAndTheFix() {
        OwnExecutors.require(List.of("1", "2", "3"));
        IllegalStateException failure =
                assertThrows(
                        IllegalStateException.class,
                        () -> OwnExecutors.require(List.of("1", "2", "1")));
        assertEquals(
                "ranks 0 and 2 run in the same executor (1), but a rank that trains in the"
                        + " executor's JVM needs one of its own (DJL's engine is per process): set"
                        + " spark.task.cpus to spark.executor.cores so that each executor runs one"
                        + " task at a time, or run a main class in a JVM per rank (runMain)",
                failure.getMessage());
    }

    @Test
    void executorsWithCoresForSeveralTasksAreRefusedOnTheDriver() {
        SparkConf conf =
                new SparkConf(false)
                        .setMaster("spark://master:7077")
                        .set("spark.executor.cores", "8")
                        .set("spark.task.cpus", "4");
        IllegalArgumentException failure =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> OwnExecutors.requireOnDriver(conf, 2));
        assertEquals(
                "spark.executor.cores=8 and spark.task.cpus=4 would run 2 ranks in one executor,"
                        + " but a rank that trains in the executor's JVM needs one of its own"
                        + " (DJL's engine is per process): set spark.task.cpus to"
                        + " spark.executor.cores so that each executor runs one task at a time, or"
                        + " run a main class in a JVM per rank (runMain)",
                failure.getMessage());
        // One rank, one task per executor, or cores left to the cluster manager: nothing to refuse.
        OwnExecutors.requireOnDriver(conf, 1);
        OwnExecutors.requireOnDriver(conf.clone().set("spark.task.cpus", "5"), 2);
        OwnExecutors.requireOnDriver(conf.clone().remove("spark.executor.cores"), 2);
        OwnExecutors.requireOnDriver(new SparkConf(false).setMaster("local-cluster[2,1,1024]"), 2);
    }

    @Test
    void aLocalMasterIsRefusedOnTheDriver() {
        IllegalArgumentException failure =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                OwnExecutors.requireOnDriver(
                                        new SparkConf(false).setMaster("local[2]"), 2));
        assertEquals(
                "ranks 0 and 1 would run in the same executor (the driver's: a local[2] master has"
                    + " no other), but a rank that trains in the executor's JVM needs one of its"
                    + " own (DJL's engine is per process): run on a cluster"
                    + " (local-cluster[N,cores,memory] on one machine), or run a main class in a"
                    + " JVM per rank (runMain)",
                failure.getMessage());
        OwnExecutors.requireOnDriver(new SparkConf(false).setMaster("local[2]"), 1);
    }
}
