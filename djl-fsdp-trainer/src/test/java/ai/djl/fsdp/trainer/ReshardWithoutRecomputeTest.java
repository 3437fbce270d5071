package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * FULL_SHARD without recompute on 2 real ranks: each unit keeps its graph, its gathered parameters'
 * pages are given back after its forward and gathered into the same addresses before its backward.
 * It trains as FULL_SHARD with recompute does (and as DJL's trainer), sends the same bytes, and
 * after a forward every unit's gathered memory is released (none of it resident), where
 * SHARD_GRAD_OP keeps it.
 */
class ReshardWithoutRecomputeTest {

    private static final int WORLD = 2;

    @Test
    void trainsAsRecomputeDoesWithTheUnitsReleasedAfterForward(@TempDir Path directory)
            throws Exception {
        List<Scenario> scenarios = new ArrayList<>();
        for (boolean adam : new boolean[] {false, true}) {
            int accumulation = adam ? 1 : 2;
            float clip = adam ? 0f : 0.5f;
            for (boolean recompute : new boolean[] {true, false}) {
                scenarios.add(
                        new Scenario(
                                ShardingStrategy.FULL_SHARD,
                                WORLD,
                                accumulation,
                                clip,
                                !adam,
                                adam,
                                3,
                                0f,
                                recompute));
            }
        }
        scenarios.add(
                new Scenario(ShardingStrategy.SHARD_GRAD_OP, WORLD, 1, 0f, false, true, 3, 0f));
        List<String> args = new ArrayList<>();
        args.add(directory.toString());
        scenarios.forEach(s -> args.add(ScenarioFiles.format(s)));
        try (RankProcesses job =
                RankProcesses.builder(ScenarioRankMain.class)
                        .worldSize(WORLD)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        List<List<Scenario.Result>> results = new ArrayList<>();
        for (int i = 0; i < scenarios.size(); i++) {
            List<Scenario.Result> ranks = new ArrayList<>();
            for (int rank = 0; rank < WORLD; rank++) {
                ranks.add(ScenarioFiles.read(directory.resolve((i + 1) + "-rank" + rank)));
            }
            results.add(ranks);
        }
        for (int pair = 0; pair < 2; pair++) {
            Scenario recompute = scenarios.get(2 * pair);
            Scenario kept = scenarios.get(2 * pair + 1);
            String what = kept.describe();
            Scenario.Result reference = kept.runReference();
            Equivalence.Bound bound = kept.noiseBound(reference);
            for (int rank = 0; rank < WORLD; rank++) {
                Scenario.Result withRecompute = results.get(2 * pair).get(rank);
                Scenario.Result without = results.get(2 * pair + 1).get(rank);
                Equivalence.assertSameTraining(
                        what + " against recompute, rank " + rank,
                        bound,
                        withRecompute.losses(),
                        without.losses(),
                        withRecompute.parameters(),
                        without.parameters());
                assertEquals(
                        bytes(withRecompute.stats()),
                        bytes(without.stats()),
                        what + ": the same bytes");
                MultiRankTrainingTest.assertNoArrayOutlivesItsStep(kept, without.liveArrays());
                for (String units : without.unitsAfterForward()) {
                    assertEquals(
                            "RELEASED:0;RELEASED:0;RELEASED:0", units, what + ": after forward");
                }
                for (String units : withRecompute.unitsAfterForward()) {
                    assertEquals(
                            "RESHARDED:0;RESHARDED:0;RESHARDED:0",
                            units,
                            recompute.describe() + ": after forward");
                }
            }
            for (String name : results.get(2 * pair).get(0).parameters().keySet()) {
                assertArrayEquals(
                        results.get(2 * pair + 1).get(0).parameters().get(name),
                        results.get(2 * pair + 1).get(1).parameters().get(name),
                        what + ": every rank ends with the same " + name);
            }
            double[] meanLosses = new double[kept.steps()];
            for (int rank = 0; rank < WORLD; rank++) {
                for (int step = 0; step < meanLosses.length; step++) {
                    meanLosses[step] += results.get(2 * pair + 1).get(rank).losses()[step] / WORLD;
                }
            }
            Equivalence.assertSameTraining(
                    what + " against DJL's trainer",
                    bound,
                    reference.losses(),
                    meanLosses,
                    reference.parameters(),
                    results.get(2 * pair + 1).get(0).parameters());
        }
        // The control: SHARD_GRAD_OP keeps every unit's gathered parameters resident until
        // backward.
        for (String units : results.get(4).get(0).unitsAfterForward()) {
            for (String unit : units.split(";")) {
                assertTrue(unit.startsWith("GATHERED:"), units);
                assertTrue(Long.parseLong(unit.substring("GATHERED:".length())) > 0, units);
            }
        }
    }

    /** The byte figures of the stats (the time waited for collectives differs from run to run). */
    private static List<Long> bytes(ShardingStats stats) {
        return List.of(
                stats.parameterBytes(),
                stats.gradientBytes(),
                stats.optimizerStateBytes(),
                stats.unshardedParameterBytes(),
                stats.sentBytesLastStep());
    }
}
