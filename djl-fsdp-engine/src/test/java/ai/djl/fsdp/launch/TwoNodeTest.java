package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.testing.RankProcesses;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A job of two "nodes" on this machine, as a multi-node job runs: each node is a network namespace
 * with its own address (10.77.0.1 and .2 on a veth pair) and its own temporary folder (a private
 * tmpfs, so no Unix socket or memory is shared between nodes: the ring crosses them over TCP), with
 * one {@code bin/fsdp launch --nnodes 2 --node-rank K --master-addr 10.77.0.1} each, as
 * docs/launcher.md tells users. One node's launcher is killed mid-run; the other node's rank must
 * end naming the killed node's rank. Runs as root where {@code ip netns} and {@code unshare} work;
 * skips with the reason elsewhere.
 */
class TwoNodeTest {

    private static final String MASTER = "10.77.0.1";

    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    void killingOneNodesLauncherEndsTheOtherNamingIt(int killed, @TempDir Path directory)
            throws Exception {
        String id = UUID.randomUUID().toString().substring(0, 6);
        List<String> namespaces = List.of("djlfsdp-" + id + "-0", "djlfsdp-" + id + "-1");
        String missing = createNodes(namespaces, "dfv" + id);
        List<Process> launchers = new ArrayList<>();
        try {
            assumeTrue(missing == null, missing);
            Path tmp = Files.createDirectory(directory.resolve("node-tmp"));
            List<Path> logs = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                Path log = directory.resolve("node" + node + ".log");
                logs.add(log);
                launchers.add(startNode(namespaces.get(node), node, tmp, log, id));
            }
            for (int node = 0; node < 2; node++) {
                awaitText(logs.get(node), "[rank" + node + "] RUNNING", launchers.get(node));
            }
            long start = System.nanoTime();
            launchers.get(killed).destroyForcibly();
            int survivor = 1 - killed;
            Process other = launchers.get(survivor);
            assertTrue(other.waitFor(60, TimeUnit.SECONDS), "the other node's launcher went on");
            double seconds = (System.nanoTime() - start) / 1e9;
            String output = Files.readString(logs.get(survivor), StandardCharsets.UTF_8);
            assertNotEquals(0, other.exitValue(), output);
            assertTrue(
                    output.contains("FAILED: ") && output.contains("rank " + killed + " "),
                    "node " + survivor + "'s rank did not name rank " + killed + ":\n" + output);
            String report = output.substring(output.lastIndexOf("fsdp launch:")).trim();
            System.out.printf(
                    "MEASURED launcher of node %d killed: node %d's launcher exited after %.1f s:"
                            + " %s%n",
                    killed, survivor, seconds, report);
        } finally {
            for (Process launcher : launchers) {
                launcher.descendants().forEach(ProcessHandle::destroyForcibly);
                launcher.destroyForcibly();
                launcher.waitFor(10, TimeUnit.SECONDS);
            }
            for (String namespace : namespaces) {
                run("ip", "netns", "del", namespace);
            }
        }
    }

    /** Starts node {@code node}'s launcher in its namespace, with a private temporary folder. */
    private static Process startNode(String namespace, int node, Path tmp, Path log, String id)
            throws IOException {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "ip",
                                "netns",
                                "exec",
                                namespace,
                                "unshare",
                                "--mount",
                                "sh",
                                "-c",
                                "mount -t tmpfs tmpfs \"$0\" && exec \"$@\"",
                                tmp.toString(),
                                Paths.get(System.getProperty("java.home"), "bin", "java")
                                        .toString(),
                                "-Xmx128m",
                                "-cp",
                                RankProcesses.classPath(),
                                Fsdp.class.getName(),
                                "launch",
                                "--nnodes",
                                "2",
                                "--node-rank",
                                Integer.toString(node),
                                "--nproc-per-node",
                                "1",
                                "--master-addr",
                                MASTER,
                                "--master-port",
                                "29500",
                                "--timeout",
                                "10",
                                "--stop-timeout",
                                "2",
                                "--jvm-opt=-Xmx256m",
                                "--jvm-opt=-Djava.io.tmpdir=" + tmp,
                                "--",
                                FailureMain.class.getName(),
                                "endless"));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("DJL_FSDP_JOB_TOKEN", "two-node-" + id);
        builder.environment().put("DJL_FSDP_RUN_ID", "two-node-" + id);
        return builder.redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** Creates the namespaces and the veth pair; returns why it cannot, or null. */
    private static String createNodes(List<String> namespaces, String veth)
            throws InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "network namespaces need root";
        }
        String[][] steps = {
            {"ip", "netns", "add", namespaces.get(0)},
            {"ip", "netns", "add", namespaces.get(1)},
            {"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"},
            {"ip", "link", "set", veth + "a", "netns", namespaces.get(0)},
            {"ip", "link", "set", veth + "b", "netns", namespaces.get(1)},
        };
        for (String[] step : steps) {
            String failure = run(step);
            if (failure != null) {
                return "cannot create the two nodes (" + failure + ")";
            }
        }
        for (int node = 0; node < 2; node++) {
            String ns = namespaces.get(node);
            String link = veth + (node == 0 ? "a" : "b");
            for (String[] step :
                    new String[][] {
                        {
                            "ip",
                            "-n",
                            ns,
                            "addr",
                            "add",
                            "10.77.0." + (node + 1) + "/24",
                            "dev",
                            link
                        },
                        {"ip", "-n", ns, "link", "set", link, "up"},
                        {"ip", "-n", ns, "link", "set", "lo", "up"},
                    }) {
                String failure = run(step);
                if (failure != null) {
                    return "cannot configure node " + node + " (" + failure + ")";
                }
            }
        }
        return null;
    }

    /** Runs a command; returns null on success, else what failed and its output. */
    private static String run(String... command) throws InterruptedException {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output =
                    new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
                return String.join(" ", command) + ": " + output.trim();
            }
            return null;
        } catch (IOException e) {
            return String.join(" ", command) + ": " + e.getMessage();
        }
    }

    private static void awaitText(Path log, String text, Process process) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            String output = Files.readString(log, StandardCharsets.UTF_8);
            if (output.contains(text)) {
                return;
            }
            if (!process.isAlive()) {
                throw new AssertionError("the launcher exited before '" + text + "':\n" + output);
            }
            Thread.sleep(200);
        }
        throw new AssertionError(
                "no '" + text + "' within 60 s:\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
