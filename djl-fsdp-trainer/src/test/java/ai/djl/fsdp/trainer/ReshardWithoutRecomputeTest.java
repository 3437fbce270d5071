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
 * SHARD_GRAD_OP keeps it. Activation checkpointing is its own setting: every second unit recomputed
 * under FULL_SHARD (the others released after forward), SHARD_GRAD_OP recomputing every unit (each
 * kept gathered) and NO_SHARD recomputing every unit train as DJL's trainer does too.
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
            for (String checkpointing : new String[] {"full", "none"}) {
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
                                checkpointing));
            }
        }
        scenarios.add(
                new Scenario(ShardingStrategy.SHARD_GRAD_OP, WORLD, 1, 0f, false, true, 3, 0f));
        scenarios.add(
                new Scenario(
                        ShardingStrategy.FULL_SHARD, WORLD, 1, 0f, false, true, 3, 0f, "every:2"));
        scenarios.add(
                new Scenario(
                        ShardingStrategy.SHARD_GRAD_OP, WORLD, 1, 0f, false, true, 3, 0f, "full"));
        scenarios.add(
                new Scenario(ShardingStrategy.NO_SHARD, WORLD, 1, 0f, false, true, 3, 0f, "full"));
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
            assertTrainsAsDjl(kept, results.get(2 * pair + 1), reference, bound);
        }
        // The control: SHARD_GRAD_OP keeps every unit's gathered parameters resident until
        // backward.
        assertKeptGathered(results.get(4).get(0));
        // Every second unit recomputed: the first and third keep their graphs over released memory.
        Scenario mixed = scenarios.get(5);
        assertTrainsAsDjl(mixed, results.get(5), mixed.runReference(), null);
        for (Scenario.Result rank : results.get(5)) {
            MultiRankTrainingTest.assertNoArrayOutlivesItsStep(mixed, rank.liveArrays());
            for (String units : rank.unitsAfterForward()) {
                assertEquals(
                        "RELEASED:0;RESHARDED:0;RELEASED:0",
                        units,
                        mixed.describe() + ": after forward");
            }
        }
        // SHARD_GRAD_OP recomputing: the parameters stay gathered, the graphs are rebuilt.
        Scenario keptRecomputed = scenarios.get(6);
        assertTrainsAsDjl(keptRecomputed, results.get(6), keptRecomputed.runReference(), null);
        assertKeptGathered(results.get(6).get(0));
        Scenario replicatedRecomputed = scenarios.get(7);
        assertTrainsAsDjl(
                replicatedRecomputed, results.get(7), replicatedRecomputed.runReference(), null);
    }

    /** Every unit's gathered parameters are resident after each forward. */
    private static void assertKeptGathered(Scenario.Result result) {
        for (String units : result.unitsAfterForward()) {
            for (String unit : units.split(";")) {
                assertTrue(unit.startsWith("GATHERED:"), units);
                assertTrue(Long.parseLong(unit.substring("GATHERED:".length())) > 0, units);
            }
        }
    }

    /**
     * The ranks' mean losses and rank 0's parameters match DJL's trainer on the global batch,
     * within {@code bound} (null: the scenario's own noise bound).
     */
    private static void assertTrainsAsDjl(
            Scenario scenario,
            List<Scenario.Result> ranks,
            Scenario.Result reference,
            Equivalence.Bound bound) {
        double[] meanLosses = new double[scenario.steps()];
        for (Scenario.Result rank : ranks) {
            for (int step = 0; step < meanLosses.length; step++) {
                meanLosses[step] += rank.losses()[step] / ranks.size();
            }
        }
        Equivalence.assertSameTraining(
                scenario.describe() + " against DJL's trainer",
                bound != null ? bound : scenario.noiseBound(reference),
                reference.losses(),
                meanLosses,
                reference.parameters(),
                ranks.get(0).parameters());
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
