package ai.djl.fsdp.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class DistributedEnvTest {

    @Test
    void torchrunsAgentStoreGivesEachRestartItsOwnRunId() {
        Map<String, String> torchrun =
                Map.of(
                        "RANK", "1",
                        "WORLD_SIZE", "2",
                        "MASTER_ADDR", "127.0.0.1",
                        "MASTER_PORT", "29500",
                        "TORCHELASTIC_USE_AGENT_STORE", "True",
                        "TORCHELASTIC_RUN_ID", "none",
                        "TORCHELASTIC_RESTART_COUNT", "2");
        DistributedEnv env = DistributedEnv.fromVariables(torchrun);
        assertTrue(env.isAgentStore());
        assertEquals("torchelastic-2-none", env.getRunId());
        assertFalse(
                DistributedEnv.fromVariables(Map.of("RANK", "0", "WORLD_SIZE", "1"))
                        .isAgentStore());
    }

    @Test
    void torchrunVariables() {
        DistributedEnv env =
                DistributedEnv.fromVariables(
                        Map.of(
                                "RANK",
                                "3",
                                "WORLD_SIZE",
                                "8",
                                "LOCAL_RANK",
                                "1",
                                "LOCAL_WORLD_SIZE",
                                "2",
                                "MASTER_ADDR",
                                "node0",
                                "MASTER_PORT",
                                "1234",
                                "DJL_FSDP_JOB_TOKEN",
                                "secret"));
        assertEquals(3, env.getRank());
        assertEquals(8, env.getWorldSize());
        assertEquals(1, env.getLocalRank());
        assertEquals(2, env.getLocalWorldSize());
        assertEquals("node0", env.getMasterAddr());
        assertEquals(1234, env.getMasterPort());
        assertEquals("secret", env.getJobToken());
        assertFalse(env.toString().contains("secret"), "toString must not show the token");
    }

    @Test
    void kubeflowSetsNoLocalRankAndNoToken() {
        DistributedEnv env =
                DistributedEnv.fromVariables(
                        Map.of("RANK", "1", "WORLD_SIZE", "2", "MASTER_ADDR", "job-master-0"));
        assertEquals(0, env.getLocalRank());
        assertEquals(1, env.getLocalWorldSize());
        assertEquals(DistributedEnv.DEFAULT_MASTER_PORT, env.getMasterPort());
        assertEquals("", env.getJobToken());
    }

    @Test
    void slurmVariables() {
        DistributedEnv env =
                DistributedEnv.fromVariables(
                        Map.of(
                                "SLURM_PROCID",
                                "5",
                                "SLURM_NTASKS",
                                "7",
                                "SLURM_LOCALID",
                                "0",
                                "SLURM_TASKS_PER_NODE",
                                "2(x3),1",
                                "SLURM_NODEID",
                                "3",
                                "MASTER_ADDR",
                                "n1",
                                "MASTER_PORT",
                                "4000"));
        assertEquals(5, env.getRank());
        assertEquals(7, env.getWorldSize());
        assertEquals(0, env.getLocalRank());
        assertEquals(1, env.getLocalWorldSize());
        assertEquals("n1", env.getMasterAddr());
        DistributedEnv perNode =
                DistributedEnv.fromVariables(
                        Map.of(
                                "SLURM_PROCID",
                                "1",
                                "SLURM_NTASKS",
                                "4",
                                "SLURM_LOCALID",
                                "1",
                                "SLURM_NTASKS_PER_NODE",
                                "2",
                                "MASTER_ADDR",
                                "n1"));
        assertEquals(2, perNode.getLocalWorldSize());
    }

    @Test
    void slurmWithoutMasterAddrSaysHowToSetIt() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                DistributedEnv.fromVariables(
                                        Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "2")));
        assertTrue(e.getMessage().contains("MASTER_ADDR"), e.getMessage());
        assertTrue(e.getMessage().contains("scontrol show hostnames"), e.getMessage());
    }

    @Test
    void tasksPerNodeExpandsSlurmsCompressedForm() {
        assertEquals(4, SlurmTask.tasksOnNode("4", 0));
        assertEquals(2, SlurmTask.tasksOnNode("2(x3),1", 2));
        assertEquals(1, SlurmTask.tasksOnNode("2(x3),1", 3));
        assertThrows(IllegalArgumentException.class, () -> SlurmTask.tasksOnNode("2(x3", 0));
        assertThrows(IllegalArgumentException.class, () -> SlurmTask.tasksOnNode("2", 1));
    }

    @Test
    void noVariablesMeansOneProcess() {
        DistributedEnv env = DistributedEnv.fromVariables(Map.of());
        assertEquals(0, env.getRank());
        assertEquals(1, env.getWorldSize());
        assertEquals(0, env.getMasterPort());
    }

    @Test
    void badValuesNameTheVariable() {
        assertMessage("RANK=2", Map.of("RANK", "2", "WORLD_SIZE", "2", "MASTER_ADDR", "h"));
        assertMessage("WORLD_SIZE='two'", Map.of("RANK", "0", "WORLD_SIZE", "two"));
        assertMessage("WORLD_SIZE is not set", Map.of("RANK", "0"));
        assertMessage("RANK is not set", Map.of("WORLD_SIZE", "2"));
        assertMessage("MASTER_ADDR is not set", Map.of("RANK", "0", "WORLD_SIZE", "2"));
        assertMessage(
                "LOCAL_RANK=2",
                Map.of(
                        "RANK",
                        "0",
                        "WORLD_SIZE",
                        "4",
                        "LOCAL_RANK",
                        "2",
                        "LOCAL_WORLD_SIZE",
                        "2",
                        "MASTER_ADDR",
                        "h"));
        assertMessage(
                "MASTER_PORT=70000",
                Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "70000"));
        assertMessage("SLURM_NTASKS='x'", Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "x"));
    }

    private static void assertMessage(String expected, Map<String, String> variables) {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> DistributedEnv.fromVariables(variables));
        assertTrue(
                e.getMessage().contains(expected),
                "'" + e.getMessage() + "' should mention " + expected);
    }

    @Test
    void slurmDerivesThePortAndTheRunFromTheJob() {
        DistributedEnv env =
                DistributedEnv.fromVariables(
                        Map.of(
                                "SLURM_PROCID", "1",
                                "SLURM_NTASKS", "2",
                                "SLURM_JOB_ID", "123456",
                                "SLURM_STEP_ID", "0",
                                "MASTER_ADDR", "node1"));
        assertEquals(DistributedEnv.SLURM_PORT_BASE + 3456, env.getMasterPort());
        assertEquals("slurm-123456.0", env.getRunId());
    }

    @Test
    void launcherRunIdWinsAndTimeoutIsChecked() {
        DistributedEnv env =
                DistributedEnv.fromVariables(
                        Map.of(
                                "RANK",
                                "0",
                                "WORLD_SIZE",
                                "2",
                                "MASTER_ADDR",
                                "127.0.0.1",
                                DistributedEnv.RUN_ID_VARIABLE,
                                "abc"));
        assertEquals("abc", env.getRunId());
        assertEquals(
                java.time.Duration.ofMillis(2500),
                ProcessGroupOptions.Builder.defaultTimeout("2.5"));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ProcessGroupOptions.Builder.defaultTimeout("soon"));
        assertTrue(e.getMessage().contains(ProcessGroupOptions.TIMEOUT_VARIABLE), e.getMessage());
    }

    @Test
    void aStoppedRankIsFoundWithinHalfAMinuteUnlessTheTimeoutIsShorter() {
        java.time.Duration minute = java.time.Duration.ofSeconds(60);
        assertEquals(
                java.time.Duration.ofSeconds(30),
                ProcessGroupOptions.builder().optTimeout(minute).build().getHeartbeatTimeout());
        assertEquals(
                java.time.Duration.ofSeconds(5),
                ProcessGroupOptions.builder()
                        .optTimeout(java.time.Duration.ofSeconds(5))
                        .build()
                        .getHeartbeatTimeout());
        assertEquals(
                java.time.Duration.ofSeconds(45),
                ProcessGroupOptions.builder()
                        .optTimeout(minute)
                        .optHeartbeatTimeout(java.time.Duration.ofSeconds(45))
                        .build()
                        .getHeartbeatTimeout());
    }
}
