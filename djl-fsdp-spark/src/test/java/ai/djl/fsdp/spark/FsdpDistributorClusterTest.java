package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.launch.Launcher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * FSDP ranks as a barrier stage on a real two-executor cluster ({@link TwoExecutorCluster}): the
 * same training as under {@code bin/fsdp launch}, data from a DataFrame, a failing rank and a
 * killed executor.
 */
class FsdpDistributorClusterTest {

    private static final int STEPS = 4;

    private static TwoExecutorCluster cluster;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TwoExecutorCluster.start();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static FsdpDistributor distributor() {
        return FsdpDistributor.builder(cluster.session())
                .setRanks(2)
                .optTimeout(Duration.ofSeconds(20))
                .build();
    }

    /** Runs {@link MlpRun} under the launcher that {@code bin/fsdp launch} runs. */
    private static List<List<Float>> launchedLosses(Path out) throws Exception {
        Launcher.builder()
                .setNprocPerNode(2)
                .setCommand(MlpRun.class.getName(), out.toString(), Integer.toString(STEPS))
                .optClassPath(System.getProperty("java.class.path"))
                .optThreadsPerRank(1)
                .build()
                .run();
        return readLosses(out);
    }

    private static List<List<Float>> readLosses(Path out) throws Exception {
        List<List<Float>> losses = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            losses.add(
                    Files.readAllLines(out.resolve("rank" + rank)).stream()
                            .map(Float::valueOf)
                            .toList());
        }
        return losses;
    }

    @Test
    void trainsAsBinFsdpLaunchDoesInTheExecutorsAndInRankJvms(@TempDir Path tmp) throws Exception {
        Path launched = Files.createDirectory(tmp.resolve("launch"));
        List<List<Float>> expected = launchedLosses(launched);
        assertEquals(STEPS, expected.get(0).size());

        List<List<Float>> inExecutors =
                distributor()
                        .run(
                                rank ->
                                        MlpRun.train(
                                                rank.getEnv(),
                                                rank.getProcessGroupOptions(),
                                                STEPS));
        assertEquals(expected, inExecutors, "losses in the executors' JVMs");

        Path rankJvms = Files.createDirectory(tmp.resolve("spark"));
        distributor().runMain(MlpRun.class.getName(), rankJvms.toString(), Integer.toString(STEPS));
        assertEquals(expected, readLosses(rankJvms), "losses in a JVM per rank");
    }

    @Test
    void eachRankRunsInAnExecutorJvmOfItsOwn() {
        List<Long> pids = distributor().run(rank -> ProcessHandle.current().pid());
        assertEquals(2, pids.stream().distinct().count(), pids.toString());
        assertTrue(!pids.contains(ProcessHandle.current().pid()), "a rank ran in the driver");
    }

    @Test
    void eachRankTrainsOnItsShareOfADataFrameDealtByPosition() {
        // 15 rows in 3 partitions of 5: a repartition to 2 ranks could give them 9 and 6 rows.
        Dataset<Row> rows =
                cluster.session()
                        .createDataset(IntStream.range(0, 15).boxed().toList(), Encoders.INT())
                        .toDF("id")
                        .repartitionByRange(3, new Column("id"))
                        .sortWithinPartitions("id");
        assertEquals(3, rows.javaRDD().getNumPartitions());
        List<List<Integer>> seen =
                distributor()
                        .run(
                                rows,
                                (rank, share) -> {
                                    List<Integer> ids = new ArrayList<>();
                                    share.forEachRemaining(row -> ids.add(row.getInt(0)));
                                    // The ranks agree on the steps, so all of them see rows.
                                    MlpRun.train(rank.getEnv(), rank.getProcessGroupOptions(), 1);
                                    return ids;
                                });
        assertEquals(
                List.of(List.of(0, 2, 4, 6, 8, 10, 12, 14), List.of(1, 3, 5, 7, 9, 11, 13)),
                seen,
                "row i goes to rank i % 2, in order");
    }

    @Test
    void aFailingRankFailsTheStageWithItsRankAndMessage() throws Exception {
        cluster.takeStageFailures();
        Exception failure =
                assertThrows(
                        Exception.class,
                        () ->
                                distributor()
                                        .run(
                                                rank ->
                                                        MlpRun.train(
                                                                rank.getEnv(),
                                                                rank.getProcessGroupOptions(),
                                                                STEPS,
                                                                step -> {
                                                                    if (rank.getEnv().getRank() == 1
                                                                            && step == 1) {
                                                                        throw new IllegalStateException(
                                                                                "the data ran out");
                                                                    }
                                                                })));
        String message = failure.getMessage();
        assertTrue(
                message.contains("djl-fsdp rank 1 of 2 failed")
                        && message.contains("the data ran out"),
                message);
        // Spark retried the whole stage once (spark.stage.maxConsecutiveAttempts=2) before giving
        // up.
        List<String> failures = cluster.takeStageFailures();
        assertTrue(
                failures.stream().anyMatch(f -> f.contains(" attempt 1: ")), failures.toString());
    }

    @Test
    void aRankJvmThatFailsFailsTheStageWithItsRankAndMessage() {
        Exception failure =
                assertThrows(
                        Exception.class,
                        () -> distributor().runMain("finetune", "--max_steps", "1"));
        String message = failure.getMessage();
        assertTrue(
                message.contains("djl-fsdp rank ")
                        && message.contains(
                                "its JVM exited with code 2: fsdp finetune: Missing required"
                                        + " option: '--output_dir"),
                message);
    }

    @Test
    void aKilledExecutorFailsTheAttemptAndTheRetriedStageTrainsAgain() throws Exception {
        cluster.takeStageFailures();
        List<List<Float>> losses =
                distributor()
                        .run(
                                rank ->
                                        MlpRun.train(
                                                rank.getEnv(),
                                                rank.getProcessGroupOptions(),
                                                STEPS,
                                                step -> {
                                                    if (rank.getEnv().getRank() == 1
                                                            && step == 1
                                                            && rank.getStageAttempt() == 0) {
                                                        Runtime.getRuntime().halt(137);
                                                    }
                                                }));
        List<String> failures = cluster.takeStageFailures();
        System.out.println("stage failures: " + failures);
        assertEquals(1, failures.size(), failures.toString());
        assertTrue(
                failures.get(0).contains("attempt 0")
                        && failures.get(0).contains("ExecutorLostFailure (executor"),
                failures.toString());
        assertEquals(STEPS, losses.get(0).size());
        assertEquals(STEPS, losses.get(1).size());
    }

    @Test
    void ranksMustBePositive() {
        for (int ranks : new int[] {0, -2}) {
            IllegalArgumentException failure =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    FsdpDistributor.builder(cluster.session())
                                            .setRanks(ranks)
                                            .build());
            assertEquals(
                    "ranks=" + ranks + ": set the number of ranks to at least 1 (setRanks)",
                    failure.getMessage());
        }
    }

    @Test
    void theSlotWaitMustBeGivenAndNotNegative() {
        for (Duration slotWait : new Duration[] {null, Duration.ofSeconds(-1)}) {
            IllegalArgumentException failure =
                    assertThrows(
                            IllegalArgumentException.class,
                            () ->
                                    FsdpDistributor.builder(cluster.session())
                                            .setRanks(2)
                                            .optSlotWait(slotWait)
                                            .build());
            assertEquals(
                    "the slot wait must be zero or more (optSlotWait), got " + slotWait,
                    failure.getMessage());
        }
    }

    @Test
    void moreRanksThanTaskSlotsFailsAtOnceNamingBoth() {
        FsdpDistributor tooMany =
                FsdpDistributor.builder(cluster.session())
                        .setRanks(3)
                        .optSlotWait(Duration.ofSeconds(1))
                        .build();
        IllegalArgumentException failure =
                assertThrows(IllegalArgumentException.class, () -> tooMany.run(rank -> 0));
        assertTrue(
                failure.getMessage().startsWith("3 ranks, but the cluster can run 2 tasks at once"),
                failure.getMessage());
    }
}
