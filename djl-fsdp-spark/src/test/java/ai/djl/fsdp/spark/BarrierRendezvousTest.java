package ai.djl.fsdp.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.launch.rank.FailureReport;
import ai.djl.fsdp.launch.rank.RankCommand;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.spark.resource.ResourceInformation;
import org.junit.jupiter.api.Test;

/** How a barrier task finds its place on its host and its GPU, and how its rank JVM starts. */
class BarrierRendezvousTest {

    @Test
    void localRanksCountTheTasksOnTheSameHost() {
        List<String> hosts = List.of("a", "b", "a", "a", "b");
        assertEquals(
                List.of(0, 0, 1, 2, 1),
                List.of(0, 1, 2, 3, 4).stream()
                        .map(rank -> BarrierRendezvous.localRank(hosts, rank))
                        .toList());
        assertEquals(
                List.of(3, 2, 3, 3, 2),
                List.of(0, 1, 2, 3, 4).stream()
                        .map(rank -> BarrierRendezvous.localWorldSize(hosts, rank))
                        .toList());
    }

    @Test
    void theHostIsTheAddressWithoutItsPort() {
        assertEquals("10.0.0.7", BarrierRendezvous.host("10.0.0.7:41231"));
        assertEquals("node-3.example", BarrierRendezvous.host("node-3.example:7077"));
        assertEquals("node-3", BarrierRendezvous.host("node-3"));
        assertEquals("::1", BarrierRendezvous.host("[::1]:41231"));
        assertEquals("fe80::1", BarrierRendezvous.host("[fe80::1]"));
    }

    @Test
    void aTaskComputesOnTheFirstGpuSparkGaveIt() {
        assertEquals(
                Device.gpu(3),
                BarrierRendezvous.gpu(
                        Map.of("gpu", new ResourceInformation("gpu", new String[] {"3", "5"}))));
        assertNull(BarrierRendezvous.gpu(Map.of()));
    }

    @Test
    void aRankJvmStartsAsBinFsdpLaunchStartsOneAndSeesItsTasksGpuAlone() {
        DistributedEnv env =
                DistributedEnv.of(1, 4, 0, 2, "node-0", 29500, "token").withRunId("spark-3.1-x");
        SparkRank rank = new SparkRank(env, Device.gpu(5), 8, Duration.ofSeconds(30), 1, null);
        ProcessBuilder builder =
                new RankProcess(ResumeFlag.of(List.of("com.example.Train")), List.of("-Xmx1g"))
                        .processBuilder(rank, Path.of("/tmp/report"));
        Map<String, String> variables = builder.environment();
        assertEquals(env.toString(), DistributedEnv.fromVariables(variables).toString());
        assertEquals("8", variables.get("OMP_NUM_THREADS"));
        assertEquals("30.0", variables.get(ProcessGroupOptions.TIMEOUT_VARIABLE));
        assertEquals("5", variables.get("CUDA_VISIBLE_DEVICES"));
        assertEquals("/tmp/report", variables.get(FailureReport.FILE_VARIABLE));
        assertEquals(
                RankCommand.MALLOC_TUNABLES, variables.get(RankCommand.MALLOC_TUNABLES_VARIABLE));
        assertTrue(
                builder.command().contains("-D" + RankThreads.THREADS_PROPERTY + "=8"),
                builder.command().toString());
        assertEquals(ProcessBuilder.Redirect.PIPE, builder.redirectInput(), "stdin is closed");
        assertEquals(ProcessBuilder.Redirect.INHERIT, builder.redirectOutput());
        assertEquals(ProcessBuilder.Redirect.INHERIT, builder.redirectError());
    }
}
