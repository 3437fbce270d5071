package ai.djl.fsdp.launch.rank;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The command line and environment of a rank's JVM, as every launcher starts one. */
class RankCommandTest {

    private final RankCommand command =
            new RankCommand(3, List.of("-Xmx1g"), "a.jar:b.jar", List.of("com.example.Main", "x"));

    @Test
    void theCommandLineSetsTheThreadsBeforeTheCallersOptions() {
        assertEquals(
                List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-D" + RankThreads.THREADS_PROPERTY + "=3",
                        "-D" + RankThreads.INTEROP_THREADS_PROPERTY + "=1",
                        "-Xmx1g",
                        "-cp",
                        "a.jar:b.jar",
                        "com.example.Main",
                        "x"),
                command.commandLine());
    }

    @Test
    void theVariablesPlaceTheRankInTheJob() {
        DistributedEnv env =
                DistributedEnv.of(1, 4, 0, 2, "node-0", 29500, "token").withRunId("run-7");
        Map<String, String> variables = command.variables(env, Duration.ofSeconds(30));
        assertEquals("3", variables.get("OMP_NUM_THREADS"));
        assertEquals("30.0", variables.get(ProcessGroupOptions.TIMEOUT_VARIABLE));
        assertEquals(env.toString(), DistributedEnv.fromVariables(variables).toString());
        assertFalse(command.variables(env, null).containsKey(ProcessGroupOptions.TIMEOUT_VARIABLE));
    }

    @Test
    void theEnvironmentAddsMallocSettingsTheLauncherAndTheReport() {
        Map<String, String> env =
                command.processBuilder(Map.of("RANK", "1"), Path.of("/tmp/report")).environment();
        assertEquals("1", env.get("RANK"));
        assertEquals(RankCommand.MALLOC_TUNABLES, env.get(RankCommand.MALLOC_TUNABLES_VARIABLE));
        assertEquals(
                Long.toString(ProcessHandle.current().pid()), env.get(LauncherWatch.PID_VARIABLE));
        assertEquals("/tmp/report", env.get(FailureReport.FILE_VARIABLE));
        assertFalse(env.containsKey("SLURM_PROCID"));
        assertEquals(
                "glibc.malloc.arena_max=2",
                command.processBuilder(
                                Map.of(
                                        RankCommand.MALLOC_TUNABLES_VARIABLE,
                                        "glibc.malloc.arena_max=2"),
                                Path.of("/tmp/report"))
                        .environment()
                        .get(RankCommand.MALLOC_TUNABLES_VARIABLE));
    }
}
