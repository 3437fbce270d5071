package ai.djl.fsdp.trainer;

import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hybrid sharding on 4 rank processes on loopback as 2 "nodes" of 2 (shard groups of {@link
 * Scenario#HYBRID_SHARD_GROUP}): HYBRID_SHARD and HYBRID_SHARD_ZERO2 train as DJL's ordinary
 * trainer on the global batch and as FULL_SHARD on the same 4 ranks, within the float32 noise of
 * the scenario, with gradient accumulation, clipping and a unit mixing frozen and trainable
 * parameters (SGD with momentum), and plainly with AdamW; each rank holds and sends what the layout
 * implies.
 */
class HybridShardingTest {

    private static final int WORLD_SIZE = 4;

    @Test
    void hybridStrategiesTrainAsFullShardAndAsDjlOnTheGlobalBatch(@TempDir Path directory)
            throws Exception {
        List<Scenario> scenarios = new ArrayList<>();
        for (ShardingStrategy strategy :
                new ShardingStrategy[] {
                    ShardingStrategy.FULL_SHARD,
                    ShardingStrategy.HYBRID_SHARD,
                    ShardingStrategy.HYBRID_SHARD_ZERO2
                }) {
            scenarios.add(new Scenario(strategy, WORLD_SIZE, 2, 0.5f, true, false, 3, 0f));
            scenarios.add(new Scenario(strategy, WORLD_SIZE, 1, 0f, false, true, 3, 0f));
        }
        List<String> args = new ArrayList<>();
        args.add(directory.toString());
        scenarios.forEach(s -> args.add(ScenarioFiles.format(s)));
        try (RankProcesses job =
                RankProcesses.builder(ScenarioRankMain.class)
                        .worldSize(WORLD_SIZE)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        List<Scenario.Result> fullShard = new ArrayList<>();
        for (int i = 0; i < scenarios.size(); i++) {
            Scenario scenario = scenarios.get(i);
            Scenario.Result reference = scenario.runReference();
            Equivalence.Bound bound = scenario.noiseBound(reference);
            Scenario.Result ranks = MultiRankTrainingTest.readRanks(directory, i + 1, scenario);
            Equivalence.assertSameTraining(
                    scenario.describe() + " against DJL",
                    bound,
                    reference.losses(),
                    ranks.losses(),
                    reference.parameters(),
                    ranks.parameters());
            if (scenario.strategy() == ShardingStrategy.FULL_SHARD) {
                fullShard.add(ranks);
            } else {
                Scenario.Result full = fullShard.get(i % 2);
                Equivalence.assertSameTraining(
                        scenario.describe() + " against FULL_SHARD on " + WORLD_SIZE + " ranks",
                        bound,
                        full.losses(),
                        ranks.losses(),
                        full.parameters(),
                        ranks.parameters());
            }
        }
    }
}
