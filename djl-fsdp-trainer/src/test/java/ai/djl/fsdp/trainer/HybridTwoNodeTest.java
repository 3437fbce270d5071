package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.fsdp.testing.TwoNodes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hybrid sharding as it runs across machines: two "nodes" ({@link TwoNodes}: network namespaces on
 * a veth pair, no memory or Unix socket shared between them) with one {@code bin/fsdp launch
 * --nproc-per-node 2} each, so every shard group is one node's ranks and only the replicate groups'
 * rings cross over TCP. HYBRID_SHARD and HYBRID_SHARD_ZERO2 train as DJL's trainer on the global
 * batch within the scenario's noise bound. Runs as root where {@code ip netns} and {@code unshare}
 * work; skips with the reason elsewhere.
 */
class HybridTwoNodeTest {

    @Test
    void hybridStrategiesTrainAcrossTwoNodes(@TempDir Path directory) throws Exception {
        TwoNodes.Creation creation = TwoNodes.create();
        assumeTrue(creation.nodes().isPresent(), creation.missing());
        List<Scenario> scenarios =
                List.of(
                        new Scenario(ShardingStrategy.HYBRID_SHARD, 4, 2, 0.5f, true, false, 3, 0f),
                        new Scenario(
                                ShardingStrategy.HYBRID_SHARD_ZERO2, 4, 1, 0f, false, true, 3, 0f));
        List<String> program = new ArrayList<>();
        program.add(ScenarioRankMain.class.getName());
        program.add(directory.toString());
        scenarios.forEach(s -> program.add(ScenarioFiles.format(s)));
        try (TwoNodes nodes = creation.nodes().get()) {
            Path tmp = Files.createDirectory(directory.resolve("node-tmp"));
            List<Process> launchers = new ArrayList<>();
            List<Path> logs = new ArrayList<>();
            for (int node = 0; node < 2; node++) {
                Path log = directory.resolve("node" + node + ".log");
                logs.add(log);
                launchers.add(nodes.launch(node, tmp, log, 2, 60, "512m", program));
            }
            for (int node = 0; node < 2; node++) {
                Process launcher = launchers.get(node);
                String output = Files.readString(logs.get(node), StandardCharsets.UTF_8);
                assertTrue(launcher.waitFor(4, TimeUnit.MINUTES), "node " + node + ":\n" + output);
                output = Files.readString(logs.get(node), StandardCharsets.UTF_8);
                assertEquals(0, launcher.exitValue(), "node " + node + ":\n" + output);
            }
        }
        for (int i = 0; i < scenarios.size(); i++) {
            Scenario scenario = scenarios.get(i);
            Scenario.Result reference = scenario.runReference();
            Scenario.Result ranks = MultiRankTrainingTest.readRanks(directory, i + 1, scenario);
            Equivalence.assertSameTraining(
                    scenario.describe() + " on two nodes",
                    scenario.noiseBound(reference),
                    reference.losses(),
                    ranks.losses(),
                    reference.parameters(),
                    ranks.parameters());
        }
    }
}
