package ai.djl.fsdp.launch.rank;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.LauncherWatch;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The command line and environment of a rank's JVM, as every launcher starts one. */
class RankCommandTest {

    private final RankCommand command =
            new RankCommand(3, List.of("-Xmx1g"), "a.jar:b.jar", List.of("com.example.Main", "x"));

    @Test
    void theCommandLineSetsTheThreadsAndTheCollectorBeforeTheCallersOptions() {
        List<String> expected = new ArrayList<>();
        expected.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        expected.add("-D" + RankThreads.THREADS_PROPERTY + "=3");
        expected.add("-D" + RankThreads.INTEROP_THREADS_PROPERTY + "=1");
        // Unless the test JVM's own environment names a collector (JAVA_TOOL_OPTIONS).
        if (!RankCommand.choosesCollector(List.of(), System.getenv())) {
            expected.add(RankCommand.COLLECTOR_OPTION);
        }
        expected.addAll(List.of("-Xmx1g", "-cp", "a.jar:b.jar", "com.example.Main", "x"));
        assertEquals(expected, command.commandLine());
    }

    @Test
    void aCollectorTheCallerChoosesIsTheOnlyOne() {
        assertFalse(RankCommand.choosesCollector(List.of("-Xmx1g", "-XX:+UseNUMA"), Map.of()));
        assertTrue(RankCommand.choosesCollector(List.of("-XX:+UseG1GC"), Map.of()));
        assertTrue(RankCommand.choosesCollector(List.of("-XX:+UseZGC"), Map.of()));
        assertTrue(RankCommand.choosesCollector(List.of("-XX:-UseParallelGC"), Map.of()));
        assertTrue(
                RankCommand.choosesCollector(
                        List.of(), Map.of("JAVA_TOOL_OPTIONS", " -Xss4m  -XX:+UseShenandoahGC")));
        assertTrue(
                RankCommand.choosesCollector(
                        List.of(), Map.of("JDK_JAVA_OPTIONS", "-XX:+UseSerialGC")));
        assertTrue(
                RankCommand.choosesCollector(List.of(), Map.of("_JAVA_OPTIONS", "-XX:+UseG1GC")));
        // Options read from a file may name one: the launcher adds none.
        assertTrue(RankCommand.choosesCollector(List.of("@rank.options"), Map.of()));
        assertTrue(RankCommand.choosesCollector(List.of("-XX:Flags=.hotspotrc"), Map.of()));
        assertTrue(RankCommand.choosesCollector(List.of("-XX:VMOptionsFile=vm.txt"), Map.of()));
        RankCommand g1 = new RankCommand(1, List.of("-XX:+UseG1GC"), "a.jar", List.of("Main"));
        assertFalse(g1.commandLine().contains(RankCommand.COLLECTOR_OPTION));
        assertTrue(g1.commandLine().contains("-XX:+UseG1GC"));
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
