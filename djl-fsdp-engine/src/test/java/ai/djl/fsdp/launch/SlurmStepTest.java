package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

class SlurmStepTest {

    private final CommandLine commandLine = new CommandLine(new LaunchCommand());

    @Test
    void severalTasksOnANodeAreRefusedWithWhatToRunInstead() {
        SlurmStep step =
                SlurmStep.of(
                        Map.of(
                                "SLURM_STEP_ID", "0",
                                "SLURM_NTASKS", "2",
                                "SLURM_NNODES", "1"));
        ParameterException e =
                assertThrows(
                        ParameterException.class, () -> step.requireOneTaskPerNode(commandLine));
        assertTrue(e.getMessage().contains("one of 2 tasks of Slurm step 0"), e.getMessage());
        assertTrue(e.getMessage().contains("--ntasks-per-node=1"), e.getMessage());
    }

    @Test
    void oneTaskPerNodeTakesItsPlaceFromSlurm() {
        SlurmStep step =
                SlurmStep.of(
                        Map.of(
                                "SLURM_STEP_ID", "3",
                                "SLURM_NTASKS", "2",
                                "SLURM_NNODES", "2",
                                "SLURM_NODEID", "1"));
        step.requireOneTaskPerNode(commandLine);
        assertEquals(2, step.nodes());
        assertEquals(1, step.nodeId());
        assertNull(SlurmStep.of(Map.of("SLURM_JOB_ID", "7")));
    }

    @Test
    void portComesFromTheEnvironmentOrTheJobId() {
        assertEquals(29600, SlurmStep.defaultPort(Map.of("MASTER_PORT", "29600")));
        assertEquals(15000 + 4321, SlurmStep.defaultPort(Map.of("SLURM_JOB_ID", "54321")));
        assertNull(SlurmStep.defaultPort(Map.of()));
    }
}
