package ai.djl.fsdp.testing;

import ai.djl.fsdp.cli.Fsdp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Two "nodes" on this machine, as a multi-node job runs: each node is a network namespace with its
 * own address (10.77.0.1 and .2 on a veth pair) and, for each launcher started in it, a private
 * tmpfs as its temporary folder, so no Unix socket or memory is shared between nodes and the rings
 * cross them over TCP. Each node runs one {@code bin/fsdp launch --nnodes 2 --node-rank K
 * --master-addr 10.77.0.1}, as docs/launcher.md tells users. Needs root ({@code ip netns}, {@code
 * unshare}); {@link #create()} says why not elsewhere.
 */
public final class TwoNodes implements AutoCloseable {

    /** The first node's address, where the store is. */
    public static final String MASTER = "10.77.0.1";

    private final String id;
    private final List<String> namespaces;
    private final List<Process> launchers = new ArrayList<>();

    private TwoNodes(String id, List<String> namespaces) {
        this.id = id;
        this.namespaces = namespaces;
    }

    /**
     * Creates the two nodes, or says why it cannot.
     *
     * @return the nodes, or empty with the reason
     */
    public static Creation create() throws InterruptedException {
        String id = UUID.randomUUID().toString().substring(0, 6);
        List<String> namespaces = List.of("djlfsdp-" + id + "-0", "djlfsdp-" + id + "-1");
        TwoNodes nodes = new TwoNodes(id, namespaces);
        String missing = createNodes(namespaces, "dfv" + id);
        if (missing != null) {
            nodes.close();
            return new Creation(Optional.empty(), missing);
        }
        return new Creation(Optional.of(nodes), null);
    }

    /**
     * The nodes, or why they could not be made.
     *
     * @param nodes the nodes
     * @param missing why not, when empty
     */
    public record Creation(Optional<TwoNodes> nodes, String missing) {}

    /** Returns the id this pair of nodes was made with (job tokens, names). */
    public String getId() {
        return id;
    }

    /**
     * Starts node {@code node}'s launcher in its namespace, with a private temporary folder.
     *
     * @param node 0 or 1
     * @param tmp an empty folder that becomes the node's private temporary folder
     * @param log where the launcher's output goes
     * @param nprocPerNode the ranks of each node
     * @param timeoutSeconds the ranks' timeout ({@code --timeout})
     * @param rankHeap the ranks' {@code -Xmx}, such as {@code 256m}
     * @param program the ranks' main class and arguments
     * @return the launcher
     */
    public Process launch(
            int node,
            Path tmp,
            Path log,
            int nprocPerNode,
            int timeoutSeconds,
            String rankHeap,
            List<String> program)
            throws IOException {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "ip",
                                "netns",
                                "exec",
                                namespaces.get(node),
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
                                Integer.toString(nprocPerNode),
                                "--master-addr",
                                MASTER,
                                "--master-port",
                                "29500",
                                "--timeout",
                                Integer.toString(timeoutSeconds),
                                "--stop-timeout",
                                "2",
                                "--jvm-opt=-Xmx" + rankHeap,
                                "--jvm-opt=-Djava.io.tmpdir=" + tmp,
                                "--"));
        command.addAll(program);
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("DJL_FSDP_JOB_TOKEN", "two-node-" + id);
        builder.environment().put("DJL_FSDP_RUN_ID", "two-node-" + id);
        Process launcher = builder.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        launchers.add(launcher);
        return launcher;
    }

    /** Stops every launcher started here and its ranks, and deletes the namespaces. */
    @Override
    public void close() throws InterruptedException {
        for (Process launcher : launchers) {
            launcher.descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
            launcher.waitFor(10, TimeUnit.SECONDS);
        }
        for (String namespace : namespaces) {
            run("ip", "netns", "del", namespace);
        }
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

    /**
     * Waits up to {@code seconds} for {@code text} in a launcher's log.
     *
     * @throws AssertionError if the launcher exits first or the time runs out
     */
    public static void awaitText(Path log, String text, Process process, int seconds)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
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
                "no '"
                        + text
                        + "' within "
                        + seconds
                        + " s:\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
    }
}
