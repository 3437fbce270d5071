package ai.djl.fsdp.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Assumptions;

/**
 * A Spark standalone cluster on this machine, started by the tests: {@code local-cluster[2,1,1024]}
 * runs a master and two workers in the test JVM, and each worker starts an executor JVM of one
 * core, so each rank of a barrier stage runs in a JVM of its own, as on a real cluster. The workers
 * build the executors' command from {@code SPARK_HOME} (the module's Surefire setting points it at
 * an empty {@code jars/} folder under {@code target/}); the executors take the test class path
 * through {@code spark.executor.extraClassPath}.
 */
final class TwoExecutorCluster implements AutoCloseable {

    static final int EXECUTORS = 2;

    private final SparkSession session;
    private final List<String> stageFailures = new ArrayList<>();

    private TwoExecutorCluster(SparkSession session) {
        this.session = session;
        session.sparkContext()
                .addSparkListener(
                        new SparkListener() {
                            @Override
                            public void onStageCompleted(SparkListenerStageCompleted completed) {
                                StageInfo stage = completed.stageInfo();
                                if (stage.failureReason().isDefined()) {
                                    synchronized (stageFailures) {
                                        stageFailures.add(
                                                "stage "
                                                        + stage.stageId()
                                                        + " attempt "
                                                        + stage.attemptNumber()
                                                        + ": "
                                                        + stage.failureReason().get());
                                    }
                                }
                            }
                        });
    }

    /**
     * Starts the cluster and waits for both executors, or skips the calling test saying why it
     * cannot run here.
     */
    static TwoExecutorCluster start() throws IOException, InterruptedException {
        String home = System.getenv("SPARK_HOME");
        Assumptions.assumeTrue(
                home != null && !home.isBlank(),
                "SPARK_HOME is not set: the workers of local-cluster need it to start executors."
                    + " Run through Maven (the module's Surefire configuration sets it), or point"
                    + " it at a folder with a jars/ folder");
        Files.createDirectories(Path.of(home, "jars"));
        SparkSession session =
                SparkSession.builder()
                        .appName("djl-fsdp-spark-test")
                        .master("local-cluster[" + EXECUTORS + ",1,1024]")
                        .config(
                                "spark.executor.extraClassPath",
                                System.getProperty("java.class.path"))
                        .config(
                                "spark.executor.extraJavaOptions",
                                "-Dai.djl.pytorch.num_threads=1"
                                        + " -Dai.djl.pytorch.num_interop_threads=1")
                        .config("spark.ui.enabled", "false")
                        .config("spark.sql.warehouse.dir", Path.of(home, "warehouse").toString())
                        .config("spark.driver.host", "127.0.0.1")
                        .config("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
                        .config("spark.stage.maxConsecutiveAttempts", "2")
                        .getOrCreate();
        TwoExecutorCluster cluster = new TwoExecutorCluster(session);
        long deadline = System.nanoTime() + 120_000_000_000L;
        // The driver is listed too.
        while (session.sparkContext().statusTracker().getExecutorInfos().length < EXECUTORS + 1) {
            if (System.nanoTime() > deadline) {
                cluster.close();
                throw new IllegalStateException("the executors did not register within 2 minutes");
            }
            Thread.sleep(200);
        }
        return cluster;
    }

    SparkSession session() {
        return session;
    }

    /**
     * Returns the failure reasons of the stages that failed so far, and forgets them. A failed job
     * returns to its caller before Spark's listener bus, which runs on threads of its own, has
     * delivered the last stage's completion; so this first waits for the bus to deliver every event
     * posted until now.
     */
    List<String> takeStageFailures() throws TimeoutException {
        session.sparkContext().listenerBus().waitUntilEmpty(TimeUnit.SECONDS.toMillis(30));
        synchronized (stageFailures) {
            List<String> failures = List.copyOf(stageFailures);
            stageFailures.clear();
            return failures;
        }
    }

    @Override
    public void close() {
        session.stop();
    }
}
