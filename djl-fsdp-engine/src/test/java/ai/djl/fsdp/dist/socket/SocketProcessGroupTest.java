package ai.djl.fsdp.dist.socket;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.CollectiveException;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.nccl.NcclProcessGroup;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SocketProcessGroupTest {

    @ParameterizedTest(name = "world size {0}, {1} links")
    @CsvSource({"2, pulled", "3, pulled", "2, stream", "3, stream", "3, small-chunks"})
    void everyCollectiveMatchesItsExpectation(int worldSize, String links) {
        try (RankProcesses job =
                RankProcesses.builder(CollectiveCheckMain.class)
                        .worldSize(worldSize)
                        .args(links)
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("OK "), results.describe());
            }
        }
    }

    @Test
    void aTemporaryFolderPastTheSocketPathLimitFormsTheRingOverTcp(@TempDir Path dir)
            throws Exception {
        // A Unix socket's path holds at most about 107 bytes; this folder alone is longer.
        Path longFolder = Files.createDirectories(dir.resolve("t".repeat(120)));
        try (RankProcesses job =
                RankProcesses.builder(CollectiveCheckMain.class)
                        .worldSize(2)
                        .jvmOptions("-Djava.io.tmpdir=" + longFolder)
                        .args("stream")
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (RankProcesses.RankResult rank : results.all()) {
                assertTrue(rank.output().contains("OK "), results.describe());
            }
        }
    }

    @Test
    void killedRankFailsEverySurvivorWithItsName() {
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class)
                        .worldSize(3)
                        .args("endless")
                        .timeout(Duration.ofMinutes(2))
                        .start()) {
            for (int rank = 0; rank < 3; rank++) {
                job.awaitOutput(rank, "RUNNING", Duration.ofSeconds(60));
            }
            job.kill(1);
            RankProcesses.Results results = job.await();
            for (int rank : new int[] {0, 2}) {
                String output = results.rank(rank).output();
                assertEquals(
                        FailureMain.FAILED_EXIT, results.rank(rank).exitCode(), results.describe());
                assertTrue(
                        output.contains("FAILED: ") && output.contains("rank 1 "),
                        "rank " + rank + " must blame rank 1:\n" + results.describe());
            }
        }
    }

    @Test
    void aSecondJobOnTheSamePortTokenAndRunIdLeavesTheRunningJobAlone(@TempDir Path directory)
            throws IOException {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        Path done = directory.resolve("done");
        try (RankProcesses first =
                RankProcesses.builder(FailureMain.class)
                        .args("until", done.toString())
                        .masterPort(port)
                        .jobTokenAndRunId("exported-token", "exported-run")
                        .start()) {
            for (int rank = 0; rank < 2; rank++) {
                first.awaitOutput(rank, "RUNNING", Duration.ofSeconds(60));
            }
            try (RankProcesses second =
                    RankProcesses.builder(FailureMain.class)
                            .args("until", done.toString())
                            .masterPort(port)
                            .jobTokenAndRunId("exported-token", "exported-run")
                            .start()) {
                RankProcesses.Results refused = second.await();
                assertTrue(
                        refused.rank(0).output().contains("the port is in use"),
                        refused.describe());
                assertTrue(
                        refused.rank(1).output().contains("the port is in use by another job"),
                        refused.describe());
                assertNotEquals(0, refused.rank(1).exitCode(), refused.describe());
            }
            Files.writeString(done, "");
            RankProcesses.Results results = first.await().assertAllSucceeded();
            assertTrue(results.rank(0).output().contains("DONE"), results.describe());
            assertTrue(results.rank(0).output().contains("RUNNING 2.0"), results.describe());
        }
    }

    @Test
    void silentRankFailsTheOthersAfterTheTimeoutWithItsName() {
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class).worldSize(3).args("silent").start()) {
            job.awaitOutput(0, "FAILED: ", Duration.ofSeconds(90));
            job.awaitOutput(2, "FAILED: ", Duration.ofSeconds(90));
            job.kill(1);
            RankProcesses.Results results = job.await();
            for (int rank : new int[] {0, 2}) {
                String output = results.rank(rank).output();
                assertEquals(
                        FailureMain.FAILED_EXIT, results.rank(rank).exitCode(), results.describe());
                assertTrue(
                        output.contains("rank 1 did not take part for PT10S"), results.describe());
            }
        }
    }

    @Test
    void mismatchedCollectivesFailEveryRankWithBothCalls() {
        try (RankProcesses job =
                RankProcesses.builder(FailureMain.class).worldSize(2).args("mismatch").start()) {
            RankProcesses.Results results = job.await();
            for (RankProcesses.RankResult rank : results.all()) {
                assertEquals(FailureMain.FAILED_EXIT, rank.exitCode(), results.describe());
                assertTrue(
                        rank.output().contains("ranks disagree on collective #1"),
                        results.describe());
            }
        }
    }

    @Test
    void worldOfOneRunsEveryCollectiveLocally() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single("t"));
                NDManager manager = NDManager.newBaseManager()) {
            NDArray input = manager.create(new float[] {1, 2, 3});
            NDArray output = manager.zeros(new Shape(3));
            float[] values = {1, 2, 3};
            group.allGather(input, output);
            assertArrayEquals(values, output.toFloatArray());
            group.reduceScatter(input, output.muli(0), ReduceOp.AVG);
            assertArrayEquals(values, output.toFloatArray());
            group.allReduce(input, ReduceOp.SUM);
            group.broadcast(input, 0);
            group.barrier();
            assertArrayEquals(values, input.toFloatArray());
            assertEquals("socket", group.getBackend());
        }
    }

    @Test
    void badArgumentsAreRefusedWithTheReason() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single("t"));
                NDManager manager = NDManager.newBaseManager()) {
            NDArray floats = manager.zeros(new Shape(4));
            String sizes =
                    assertThrows(
                                    IllegalArgumentException.class,
                                    () -> group.allGather(floats, manager.zeros(new Shape(5))))
                            .getMessage();
            assertTrue(sizes.contains("world size"), sizes);
            String types =
                    assertThrows(
                                    IllegalArgumentException.class,
                                    () ->
                                            group.allGather(
                                                    floats,
                                                    manager.zeros(new Shape(4), DataType.INT32)))
                            .getMessage();
            assertTrue(types.contains("must match"), types);
            String dtype =
                    assertThrows(
                                    IllegalArgumentException.class,
                                    () ->
                                            group.allReduce(
                                                    manager.zeros(new Shape(4), DataType.INT8),
                                                    ReduceOp.SUM))
                            .getMessage();
            assertTrue(dtype.contains("INT8") || dtype.contains("int8"), dtype);
            NDArray transposed = manager.zeros(new Shape(3, 4)).transpose();
            String layout =
                    assertThrows(
                                    IllegalArgumentException.class,
                                    () -> group.allReduce(transposed, ReduceOp.SUM))
                            .getMessage();
            assertTrue(layout.contains("not contiguous"), layout);
            String root =
                    assertThrows(IllegalArgumentException.class, () -> group.broadcast(floats, 1))
                            .getMessage();
            assertTrue(root.contains("root 1"), root);
        }
    }

    @Test
    void closedGroupFailsLaterWork() {
        ProcessGroup group = ProcessGroups.init(DistributedEnv.single("t"));
        group.close();
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray array = manager.zeros(new Shape(4));
            CollectiveException e =
                    assertThrows(
                            CollectiveException.class, () -> group.allReduce(array, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
    }

    @Test
    void gpuDeviceWithoutNcclSaysWhatItNeeds() {
        Assumptions.assumeFalse(NcclProcessGroup.isAvailable(), "NCCL can run here");
        ProcessGroupOptions options =
                ProcessGroupOptions.builder().optDevice(Device.gpu(0)).build();
        UnsupportedOperationException e =
                assertThrows(
                        UnsupportedOperationException.class,
                        () -> ProcessGroups.init(DistributedEnv.single("t"), options));
        assertTrue(e.getMessage().contains("mvn -Pcuda"), e.getMessage());
    }
}
