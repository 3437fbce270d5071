package ai.djl.fsdp.launch;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/fsdp launch} in a JVM of its own: killed by SIGKILL, its ranks must not run on;
 * stopped by SIGTERM with its output going to a pipe, it says it was stopped.
 */
class LauncherDeathTest {

    @Test
    @Timeout(180)
    void ranksExitWithinSecondsOfTheirLaunchersDeath() throws Exception {
        Process launcher =
                launchTwoRanks(
                                "--timeout",
                                "5",
                                "--jvm-opt=-Xmx512m",
                                "--jvm-opt=-XX:+UseSerialGC",
                                FailureMain.class.getName(),
                                "endless")
                        .redirectErrorStream(true)
                        .start();
        try {
            CountDownLatch running = new CountDownLatch(2);
            StringBuilder output = new StringBuilder();
            Thread reader =
                    new Thread(
                            () -> {
                                try (BufferedReader in =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        launcher.getInputStream(),
                                                        StandardCharsets.UTF_8))) {
                                    for (String line; (line = in.readLine()) != null; ) {
                                        synchronized (output) {
                                            output.append(line).append('\n');
                                        }
                                        if (line.endsWith("] RUNNING")) {
                                            running.countDown();
                                        }
                                    }
                                } catch (IOException e) {
                                    // the launcher died
                                }
                            });
            reader.setDaemon(true);
            reader.start();
            assertTrue(running.await(120, TimeUnit.SECONDS), "the ranks did not start:\n" + output);
            List<ProcessHandle> ranks =
                    launcher.children().filter(ProcessHandle::isAlive).collect(Collectors.toList());
            assertTrue(ranks.size() == 2, "expected 2 rank processes: " + ranks);

            long start = System.nanoTime();
            RankProcesses.signal(launcher.pid(), "KILL");
            for (ProcessHandle rank : ranks) {
                rank.onExit().get(30, TimeUnit.SECONDS);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(
                    "MEASURED SIGKILL of the launcher: its 2 ranks exited after %.1f s%n", seconds);
            assertTrue(seconds < 10, "the ranks took " + seconds + " s to exit");
        } finally {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
        }
    }

    @Test
    @Timeout(180)
    void sigtermWithOutputToAPipeSaysTheLauncherWasStopped(@TempDir Path pids) throws Exception {
        // Output and errors go to pipes this test reads only once the launcher has exited.
        Process launcher =
                launchTwoRanks(
                                "--jvm-opt=-Xmx64m",
                                RankProbe.class.getName(),
                                "fail",
                                "9",
                                "0",
                                pids.toString())
                        .start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (RankProbe.pidFiles(pids) < 2 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(RankProbe.pidFiles(pids) == 2, "the ranks did not start");
            RankProcesses.signal(launcher.pid(), "TERM");
            assertTrue(launcher.waitFor(60, TimeUnit.SECONDS), "the launcher did not exit");
            String errors = new String(launcher.getErrorStream().readAllBytes(), UTF_8);
            assertTrue(
                    errors.contains("fsdp launch: the launcher was stopped and stopped its ranks"),
                    "stderr: " + errors);
        } finally {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
        }
    }

    /** Returns {@code bin/fsdp launch} of two ranks of one thread each, in a JVM of its own. */
    private static ProcessBuilder launchTwoRanks(String... arguments) {
        String classPath = System.getProperty("surefire.test.class.path");
        if (classPath == null || classPath.isEmpty()) {
            classPath = System.getProperty("java.class.path");
        }
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-Xmx64m",
                                "-cp",
                                classPath,
                                Fsdp.class.getName(),
                                "launch",
                                "--nproc-per-node",
                                "2",
                                "--threads-per-rank",
                                "1"));
        command.addAll(List.of(arguments));
        return new ProcessBuilder(command);
    }
}
