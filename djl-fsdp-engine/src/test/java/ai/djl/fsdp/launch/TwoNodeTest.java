package ai.djl.fsdp.launch;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.fsdp.dist.socket.FailureMain;
import ai.djl.fsdp.testing.TwoNodes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A job of two "nodes" on this machine ({@link TwoNodes}: two network namespaces joined by a veth
 * pair, one {@code bin/fsdp launch} each). One node's launcher is killed mid-run; the other node's
 * rank must end naming the killed node's rank. Runs as root where {@code ip netns} and {@code
 * unshare} work; skips with the reason elsewhere.
 */
class TwoNodeTest {

    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    void killingOneNodesLauncherEndsTheOtherNamingIt(int killed, @TempDir Path directory)
            throws Exception {
        TwoNodes.Creation creation = TwoNodes.create();
        assumeTrue(creation.nodes().isPresent(), creation.missing());
        try (TwoNodes nodes = creation.nodes().get()) {
            Path tmp = Files.createDirectory(directory.resolve("node-tmp"));
            List<Path> logs = new ArrayList<>();
            List<Process> launchers = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                Path log = directory.resolve("node" + node + ".log");
                logs.add(log);
                launchers.add(
                        nodes.launch(
                                node,
                                tmp,
                                log,
                                1,
                                10,
                                "256m",
                                List.of(FailureMain.class.getName(), "endless")));
            }
            for (int node = 0; node < 2; node++) {
                TwoNodes.awaitText(
                        logs.get(node), "[rank" + node + "] RUNNING", launchers.get(node), 60);
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
        }
    }
}
