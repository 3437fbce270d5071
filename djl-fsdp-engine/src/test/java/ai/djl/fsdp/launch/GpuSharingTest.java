package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.dist.RankDevice;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Several ranks per GPU: the mapping and each rank's variables, with no GPU needed. */
class GpuSharingTest {

    private static final OptionalInt NCCL_2_28_9 = OptionalInt.of(22809);
    private static final OptionalInt NCCL_2_30_0 = OptionalInt.of(23000);

    @Test
    void localRankRComputesOnGpuROverK() {
        GpuSharing two = GpuSharing.of(2, NCCL_2_28_9, 0);
        GpuSharing three = GpuSharing.of(3, NCCL_2_28_9, 0);
        int[] byTwo = {0, 0, 1, 1, 2};
        int[] byThree = {0, 0, 0, 1, 1};
        for (int rank = 0; rank < 5; rank++) {
            assertEquals(byTwo[rank], two.gpuOf(rank));
            assertEquals(byThree[rank], three.gpuOf(rank));
        }
        assertThrows(IllegalArgumentException.class, () -> GpuSharing.of(1, NCCL_2_28_9, 0));
    }

    @Test
    void beforeNccl230EachRankIsAHostOfItsOwnOverLoopbackSockets() {
        GpuSharing sharing = GpuSharing.of(2, NCCL_2_28_9, 1);
        Map<String, String> zero = sharing.environment(0);
        Map<String, String> one = sharing.environment(1);
        assertEquals("2", zero.get(RankDevice.RANKS_PER_GPU_VARIABLE));
        assertEquals("lo", zero.get("NCCL_SOCKET_IFNAME"));
        assertEquals("lo", one.get("NCCL_SOCKET_IFNAME"));
        assertEquals("djl-fsdp-node1-local-rank0", zero.get("NCCL_HOSTID"));
        assertEquals("djl-fsdp-node1-local-rank1", one.get("NCCL_HOSTID"));
        assertFalse(zero.containsKey("NCCL_MULTI_RANK_GPU_ENABLE"));
        assertTrue(sharing.notice().contains("NCCL 2.28.9"), sharing.notice());
        assertTrue(sharing.notice().contains("a socket's bandwidth"), sharing.notice());
    }

    @Test
    void fromNccl230RanksShareAGpuThroughNcclsOwnSwitch() {
        GpuSharing sharing = GpuSharing.of(2, NCCL_2_30_0, 0);
        Map<String, String> env = sharing.environment(1);
        assertEquals("1", env.get("NCCL_MULTI_RANK_GPU_ENABLE"));
        assertFalse(env.containsKey("NCCL_HOSTID"));
        assertFalse(env.containsKey("NCCL_SOCKET_IFNAME"));
        assertTrue(sharing.notice().contains("NCCL 2.30.0"), sharing.notice());
    }

    @Test
    void withoutNcclOnlyTheMappingIsSet() {
        GpuSharing sharing = GpuSharing.of(2, OptionalInt.empty(), 0);
        assertEquals(Map.of(RankDevice.RANKS_PER_GPU_VARIABLE, "2"), sharing.environment(3));
        assertTrue(sharing.notice().contains("no NCCL found here"), sharing.notice());
    }

    @Test
    void theLauncherGivesEachRankItsLayoutVariables() {
        Launcher launcher =
                Launcher.builder()
                        .setNprocPerNode(2)
                        .setCommand(RankProbe.class.getName())
                        .optGpuSharing(GpuSharing.of(2, NCCL_2_28_9, 0))
                        .build();
        assertEquals("djl-fsdp-node0-local-rank1", launcher.rankEnvironment(1).get("NCCL_HOSTID"));
        assertEquals("2", launcher.rankEnvironment(0).get(RankDevice.RANKS_PER_GPU_VARIABLE));
        Launcher plain =
                Launcher.builder().setNprocPerNode(2).setCommand(RankProbe.class.getName()).build();
        assertFalse(plain.rankEnvironment(1).containsKey(RankDevice.RANKS_PER_GPU_VARIABLE));
    }

    @Test
    void theCommandRefusesSharingWhereNcclCannotRunAndShowsTheMappingInADryRun() {
        // This test runs where libtorch's CPU build is all there is: no NCCL.
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine fsdp = Fsdp.commandLine();
        fsdp.setOut(new PrintWriter(out, true));
        fsdp.setErr(new PrintWriter(err, true));
        int refused =
                fsdp.execute("launch", "--nproc-per-node", "2", "--ranks-per-gpu", "2", "x.Y");
        assertEquals(2, refused);
        assertTrue(err.toString().contains("NCCL cannot run here"), err.toString());
        assertTrue(err.toString().contains("--dry-run"), err.toString());

        int dry =
                fsdp.execute(
                        "launch",
                        "--nproc-per-node",
                        "4",
                        "--ranks-per-gpu",
                        "2",
                        "--dry-run",
                        "x.Y");
        assertEquals(0, dry, err.toString());
        assertTrue(out.toString().contains("local rank 3: gpu(1)"), out.toString());
        assertTrue(out.toString().contains("test layout: 2 ranks per GPU"), out.toString());

        int bad = fsdp.execute("launch", "--nproc-per-node", "2", "--ranks-per-gpu", "0", "x.Y");
        assertEquals(2, bad);
        assertTrue(err.toString().contains("--ranks-per-gpu must be at least 1"), err.toString());
    }
}
