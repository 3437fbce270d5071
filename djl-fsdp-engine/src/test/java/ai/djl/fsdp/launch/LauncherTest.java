package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.launch.rank.RankAllocator;
import ai.djl.fsdp.launch.rank.RankCommand;
import ai.djl.fsdp.launch.rank.RankThreads;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Starts real rank JVMs running {@link RankProbe}. */
class LauncherTest {

    /** Rank JVMs only print a few lines: keep them small and quick to start. */
    private static final List<String> SMALL_JVM = List.of("-Xmx32m", "-XX:TieredStopAtLevel=1");

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private Launcher.Builder probe(int nproc, String... args) {
        String[] command = new String[args.length + 1];
        command[0] = RankProbe.class.getName();
        System.arraycopy(args, 0, command, 1, args.length);
        return Launcher.builder()
                .setNprocPerNode(nproc)
                .setCommand(command)
                .optJavaOptions(SMALL_JVM)
                .optOutput(utf8(out), utf8(err));
    }

    /** Ranks that sleep but {@code failingRank}, which exits with {@code code} once all run. */
    private Launcher failingProbe(int nproc, int failingRank, int code, Path pidDirectory) {
        return probe(
                        nproc,
                        "fail",
                        Integer.toString(failingRank),
                        Integer.toString(code),
                        pidDirectory.toString())
                .optStopTimeout(Duration.ofSeconds(2))
                .build();
    }

    @Test
    @Timeout(120)
    void everyRankGetsItsPlaceInTheJobAndItsThreads() throws InterruptedException {
        Launcher launcher = probe(2, "report").build();
        launcher.run();

        Map<String, String> rank0 = reportOf(0);
        Map<String, String> rank1 = reportOf(1);
        assertEquals("0", rank0.get("RANK"));
        assertEquals("1", rank1.get("RANK"));
        assertEquals("0", rank0.get("LOCAL_RANK"));
        assertEquals("1", rank1.get("LOCAL_RANK"));
        int expectedThreads =
                RankThreads.forNode(
                                null,
                                2,
                                Runtime.getRuntime().availableProcessors(),
                                System.getenv())
                        .perRank();
        for (Map<String, String> report : List.of(rank0, rank1)) {
            assertEquals("2", report.get("WORLD_SIZE"));
            assertEquals("2", report.get("LOCAL_WORLD_SIZE"));
            assertEquals("127.0.0.1", report.get("MASTER_ADDR"));
            assertTrue(Integer.parseInt(report.get("MASTER_PORT")) > 0);
            assertEquals(String.valueOf(expectedThreads), report.get("num_threads"));
            assertEquals(String.valueOf(expectedThreads), report.get("OMP_NUM_THREADS"));
            assertEquals("1", report.get("num_interop_threads"));
            assertEquals(
                    RankCommand.MALLOC_TUNABLES, report.get(RankCommand.MALLOC_TUNABLES_VARIABLE));
            assertEquals(
                    String.valueOf(
                            RankAllocator.choose(System.getenv())
                                    .variables(System.getenv())
                                    .getOrDefault("LD_PRELOAD", System.getenv("LD_PRELOAD"))),
                    report.get("LD_PRELOAD"));
        }
        assertEquals(expectedThreads, launcher.getThreadsPerRank());
        assertEquals(rank0.get("MASTER_PORT"), rank1.get("MASTER_PORT"));
        String token = rank0.get(DistributedEnv.JOB_TOKEN_VARIABLE);
        assertEquals(token, rank1.get(DistributedEnv.JOB_TOKEN_VARIABLE));
        assertFalse(token == null || token.isEmpty() || "null".equals(token));
    }

    @Test
    @Timeout(120)
    void everyOutputLineCarriesItsRank() throws InterruptedException {
        probe(2, "report").build().run();

        List<String> lines = lines(out);
        assertEquals(2 * (RankProbe.VARIABLES.size() + 2), lines.size(), String.join("\n", lines));
        for (String line : lines) {
            assertTrue(line.matches("\\[rank[01]\\] \\S+=\\S+"), line);
        }
        assertEquals(List.of("[rank0] stderr line", "[rank1] stderr line"), sorted(lines(err)));
    }

    @Test
    @Timeout(120)
    void aFailingRankStopsTheOthersAndIsNamed(@TempDir Path pidDirectory)
            throws IOException, InterruptedException {
        Launcher launcher = failingProbe(3, 1, 3, pidDirectory);

        RankFailedException failure = assertThrows(RankFailedException.class, launcher::run);

        assertEquals(1, failure.getRank());
        assertEquals(3, failure.getExitCode());
        assertTrue(
                failure.getMessage().contains("rank 1 exited with code 3"), failure.getMessage());
        for (int rank = 0; rank < 3; rank++) {
            long pid =
                    Long.parseLong(Files.readString(pidDirectory.resolve("rank" + rank + ".pid")));
            assertFalse(
                    ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false),
                    "rank " + rank + " (process " + pid + ") is still alive");
        }
    }

    @Test
    @Timeout(120)
    void ranksStoppedByTheLauncherAreNotReportedAsFailed(@TempDir Path pidDirectory)
            throws IOException, InterruptedException {
        // No rank is told to fail: all sleep until stopped.
        Launcher launcher = failingProbe(2, -1, 0, pidDirectory);

        try (LaunchedJob job = launcher.start()) {
            while (RankProbe.pidFiles(pidDirectory) < 2) {
                Thread.sleep(20);
            }
            // As the shutdown hook does when the launcher gets Ctrl-C or SIGTERM.
            CompletableFuture.runAsync(job::stop);
            RankFailedException stopped =
                    assertThrows(RankFailedException.class, job::awaitSuccess);

            assertTrue(stopped.isLauncherStopped());
            assertTrue(
                    stopped.getMessage().startsWith("the launcher was stopped"),
                    stopped.getMessage());
            for (int rank : job.getRanks()) {
                assertFalse(job.process(rank).isAlive(), "rank " + rank);
            }
        }
    }

    @Test
    @Timeout(120)
    void aLogDirectoryGetsEachRanksOutput(@TempDir Path logDirectory)
            throws IOException, InterruptedException {
        probe(2, "report").optLogDirectory(logDirectory).build().run();

        assertEquals(List.of(), lines(out));
        for (int rank = 0; rank < 2; rank++) {
            List<String> log = Files.readAllLines(logDirectory.resolve(Launcher.logFileName(rank)));
            assertTrue(log.contains("RANK=" + rank), String.join("\n", log));
            assertTrue(log.contains("stderr line"), String.join("\n", log));
        }
    }

    @Test
    void explicitThreadsTokenAndMallocSettingsReachEveryRank() throws InterruptedException {
        probe(2, "report")
                .optThreadsPerRank(3)
                .optJobToken("shared-secret")
                .optEnvironment(RankCommand.MALLOC_TUNABLES_VARIABLE, "glibc.malloc.arena_max=2")
                .build()
                .run();

        for (int rank = 0; rank < 2; rank++) {
            Map<String, String> report = reportOf(rank);
            assertEquals("shared-secret", report.get(DistributedEnv.JOB_TOKEN_VARIABLE));
            assertEquals("3", report.get("num_threads"));
            assertEquals("3", report.get("OMP_NUM_THREADS"));
            assertEquals(
                    "glibc.malloc.arena_max=2", report.get(RankCommand.MALLOC_TUNABLES_VARIABLE));
        }
    }

    @Test
    @Timeout(120)
    void theChosenAllocatorIsPreloadedInEveryRank() throws Exception {
        // Any shared library shows the mechanism; this JVM's own C library is always there.
        Path libc;
        try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
            libc =
                    maps.map(line -> line.substring(line.lastIndexOf(' ') + 1))
                            .filter(file -> file.endsWith("/libc.so.6"))
                            .map(Path::of)
                            .findFirst()
                            .orElseThrow();
        }
        probe(2, "report").optEnvironment(RankAllocator.VARIABLE, libc.toString()).build().run();

        Map<String, String> chosen = new HashMap<>(System.getenv());
        chosen.put(RankAllocator.VARIABLE, libc.toString());
        String expected =
                RankAllocator.choose(chosen)
                        .variables(System.getenv())
                        .getOrDefault("LD_PRELOAD", System.getenv("LD_PRELOAD"));
        assertTrue(expected.startsWith(libc.toString()), expected);
        for (int rank = 0; rank < 2; rank++) {
            assertEquals(expected, reportOf(rank).get("LD_PRELOAD"));
        }
    }

    @Test
    void badSettingsAreRejectedBeforeAnyRankStarts() {
        assertThrows(
                IllegalArgumentException.class,
                () -> Launcher.builder().setNprocPerNode(0).setCommand("bench").build());
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        Launcher.builder()
                                .setNprocPerNode(1)
                                .setCommand("com.example.Missing")
                                .build());
        IllegalArgumentException noAddress =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                Launcher.builder()
                                        .setNprocPerNode(1)
                                        .optNnodes(2)
                                        .optJobToken("t")
                                        .setCommand("bench")
                                        .build());
        assertTrue(noAddress.getMessage().contains("master-addr"), noAddress.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        Launcher.builder()
                                .setNprocPerNode(1)
                                .optNnodes(2)
                                .optNodeRank(2)
                                .optMasterAddr("10.0.0.1")
                                .setCommand("bench")
                                .build());
    }

    @Test
    void ranksOfLaterNodesContinueTheNumbering() throws InterruptedException {
        probe(2, "report")
                .optNnodes(2)
                .optNodeRank(1)
                .optMasterAddr("127.0.0.1")
                .optJobToken("t")
                .build()
                .run();

        assertEquals("2", reportOf(2).get("RANK"));
        assertEquals("3", reportOf(3).get("RANK"));
        assertEquals("4", reportOf(3).get("WORLD_SIZE"));
        assertEquals("1", reportOf(3).get("LOCAL_RANK"));
        assertEquals("29500", reportOf(3).get("MASTER_PORT"));
    }

    @Test
    void aCallerCanRunSomeRanksItselfWithTheLaunchersEnvironment() throws InterruptedException {
        Launcher launcher = probe(2, "report").optLocalRanks(List.of(1)).build();
        Map<String, String> inProcess = launcher.rankEnvironment(0);

        launcher.run();

        assertTrue(lines(out).stream().noneMatch(line -> line.startsWith("[rank0]")));
        Map<String, String> started = reportOf(1);
        assertEquals("0", inProcess.get("RANK"));
        assertEquals("1", started.get("RANK"));
        for (String shared :
                List.of(
                        "WORLD_SIZE",
                        "MASTER_ADDR",
                        "MASTER_PORT",
                        DistributedEnv.JOB_TOKEN_VARIABLE)) {
            assertEquals(inProcess.get(shared), started.get(shared), shared);
        }
    }

    private Map<String, String> reportOf(int rank) {
        String prefix = "[rank" + rank + "] ";
        return lines(out).stream()
                .filter(line -> line.startsWith(prefix))
                .map(line -> line.substring(prefix.length()).split("=", 2))
                .collect(Collectors.toMap(kv -> kv[0], kv -> kv[1], (a, b) -> b));
    }

    private static List<String> lines(ByteArrayOutputStream stream) {
        String text = stream.toString(StandardCharsets.UTF_8);
        return text.isEmpty() ? List.of() : Arrays.asList(text.split("\\R"));
    }

    private static List<String> sorted(List<String> lines) {
        return lines.stream().sorted().collect(Collectors.toList());
    }

    private static PrintStream utf8(ByteArrayOutputStream stream) {
        return new PrintStream(stream, true, StandardCharsets.UTF_8);
    }
}
