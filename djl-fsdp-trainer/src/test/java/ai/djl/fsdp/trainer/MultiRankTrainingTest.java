package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * FSDP on 2 and 3 ranks (real processes on loopback) against DJL's ordinary trainer on the same
 * global batches, in every strategy: with gradient accumulation, clipping and a unit mixing frozen
 * and trainable parameters (SGD with momentum), and plainly with AdamW. One launch per world size
 * runs all of them; each rank also reports what it holds and sends, checked against what the
 * strategy implies from the units' sizes.
 */
class MultiRankTrainingTest {

    /** The trainable and frozen element counts of each flat unit of {@link TinyLm}, root first. */
    private static List<long[]> unitSizes(boolean freeze) {
        long mixer = 2L * TinyLm.WIDTH + TinyLm.WIDTH * TinyLm.WIDTH + TinyLm.WIDTH;
        long norm = 2L * TinyLm.WIDTH;
        long root = (long) TinyLm.VOCAB * TinyLm.WIDTH + TinyLm.VOCAB;
        return List.of(
                new long[] {root, 0},
                new long[] {mixer, 0},
                freeze ? new long[] {mixer - norm, norm} : new long[] {mixer, 0},
                new long[] {mixer, 0});
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void matchesDjlTrainerAndAccountsItsBytes(int worldSize, @TempDir Path directory)
            throws Exception {
        List<Scenario> scenarios = new ArrayList<>();
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            if (strategy.isHybrid()) {
                continue; // HybridShardingTest
            }
            scenarios.add(new Scenario(strategy, worldSize, 2, 0.5f, true, false, 3, 0f));
            scenarios.add(new Scenario(strategy, worldSize, 1, 0f, false, true, 3, 0f));
        }
        List<String> args = new ArrayList<>();
        args.add(directory.toString());
        scenarios.forEach(s -> args.add(ScenarioFiles.format(s)));
        args.add(ScenarioRankMain.FIT);
        RankProcesses.Results results;
        try (RankProcesses job =
                RankProcesses.builder(ScenarioRankMain.class)
                        .worldSize(worldSize)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            results = job.await().assertAllSucceeded();
        }
        assertFitMatches(worldSize, directory.resolve(args.size() - 1 + "-rank0"), results);
        for (int i = 0; i < scenarios.size(); i++) {
            Scenario scenario = scenarios.get(i);
            Scenario.Result reference = scenario.runReference();
            Scenario.Result ranks = readRanks(directory, i + 1, scenario);
            Equivalence.assertSameTraining(
                    scenario.describe(),
                    scenario.noiseBound(reference),
                    reference.losses(),
                    ranks.losses(),
                    reference.parameters(),
                    ranks.parameters());
        }
    }

    /**
     * Reads what every rank wrote for the {@code index}-th argument, checks that the ranks end with
     * the same parameters, hold and send what the scenario implies and free every step's arrays.
     *
     * @return the ranks' mean losses and rank 0's parameters
     */
    static Scenario.Result readRanks(Path directory, int index, Scenario scenario)
            throws IOException {
        int worldSize = scenario.worldSize();
        double[] meanLosses = new double[scenario.steps()];
        Scenario.Result rank0 = null;
        for (int rank = 0; rank < worldSize; rank++) {
            Scenario.Result result = ScenarioFiles.read(directory.resolve(index + "-rank" + rank));
            for (int step = 0; step < meanLosses.length; step++) {
                meanLosses[step] += result.losses()[step] / worldSize;
            }
            if (rank == 0) {
                rank0 = result;
            } else {
                for (String name : rank0.parameters().keySet()) {
                    assertArrayEquals(
                            rank0.parameters().get(name),
                            result.parameters().get(name),
                            scenario.describe() + ": every rank ends with the same " + name);
                }
            }
            assertAccounting(scenario, result.stats());
            assertNoArrayOutlivesItsStep(scenario, result.liveArrays());
        }
        return new Scenario.Result(meanLosses, rank0.parameters(), rank0.stats(), null, null);
    }

    /**
     * EasyTrain.fit over global batches split across the ranks ends where DJL's fit on the whole
     * batches ends (as rank 0's last checkpoint shows); the listeners saw every batch and epoch;
     * only rank 0 logged.
     */
    private static void assertFitMatches(
            int worldSize, Path rank0File, RankProcesses.Results results) throws Exception {
        FitScenario.Result reference = FitScenario.runReference();
        Scenario.Result fit = ScenarioFiles.read(rank0File);
        assertEquals(
                FitScenario.EPOCHS * FitScenario.BATCHES,
                (int) fit.losses()[0],
                "training batches the listener saw");
        assertEquals(FitScenario.EPOCHS, (int) fit.losses()[1], "epochs the listener saw");
        Equivalence.assertSameTraining(
                "checkpoint of EasyTrain.fit on " + worldSize + " ranks",
                FitScenario.noiseBound(FitScenario.Variant.PLAIN, reference.parameters()),
                new double[0],
                new double[0],
                reference.parameters(),
                fit.parameters());
        String logged = "Epoch " + FitScenario.EPOCHS + " finished";
        assertTrue(results.rank(0).output().contains(logged), "rank 0 logs");
        for (int rank = 1; rank < worldSize; rank++) {
            assertTrue(!results.rank(rank).output().contains(logged), "rank " + rank + " is quiet");
        }
    }

    /**
     * Gathered parameters, activations, the tape and views are freed every step: from the second
     * step on (the first allocates the gradient shards) the model's managers hold as many arrays
     * after each step as after the one before.
     */
    static void assertNoArrayOutlivesItsStep(Scenario scenario, int[] liveArrays) {
        for (int step = 2; step < liveArrays.length; step++) {
            assertEquals(
                    liveArrays[1],
                    liveArrays[step],
                    scenario.describe() + ": arrays alive after step " + step);
        }
    }

    /**
     * Checks what a rank holds and sends against what the strategy implies from the units' sizes:
     * shards of 1/N of each flat parameter over the N ranks of a shard group (all the ranks, or
     * {@link Scenario#HYBRID_SHARD_GROUP} under hybrid sharding, whose R replicas each all-reduce
     * their gradient shards).
     */
    private static void assertAccounting(Scenario scenario, ShardingStats stats) {
        boolean hybrid = scenario.strategy().isHybrid();
        int n = hybrid ? Scenario.HYBRID_SHARD_GROUP : scenario.worldSize();
        int replicas = scenario.worldSize() / n;
        boolean sharded = scenario.strategy().isSharded();
        long parameters = 0;
        long gradients = 0;
        long unsharded = 0;
        long flats = 0;
        long gatheredPerMicroBatch = 0;
        long scatteredPerMicroBatch = 0;
        long reducedPerMicroBatch = 0;
        long acrossPerMicroBatch = 0;
        for (int unit = 0; unit < 4; unit++) {
            long[] sizes = unitSizes(scenario.freeze()).get(unit);
            // The third mixer (unit 3) is called twice a pass: each call is gathered and reduced.
            int calls = unit == 3 ? 2 : 1;
            // The root is gathered once per micro-batch; a unit resharded after forward twice a
            // call (forward and recompute), one kept gathered once (its calls share the gather).
            int gathers =
                    unit == 0 ? 1 : scenario.strategy().isReshardAfterForward() ? 2 * calls : 1;
            for (int kind = 0; kind < 2; kind++) {
                long numel = sizes[kind];
                if (numel == 0) {
                    continue;
                }
                flats++;
                unsharded += numel * 4;
                long held = sharded ? (numel + n - 1) / n * 4 : numel * 4;
                parameters += held;
                boolean trainable = kind == 0;
                if (trainable) {
                    gradients += held;
                }
                if (sharded) {
                    gatheredPerMicroBatch += gathers * (n - 1) * held;
                    if (trainable) {
                        scatteredPerMicroBatch += calls * (n - 1) * held;
                        acrossPerMicroBatch += calls * 2 * held * (replicas - 1) / replicas;
                    }
                } else if (trainable) {
                    reducedPerMicroBatch += calls * 2 * held * (n - 1) / n;
                }
            }
        }
        long across = acrossPerMicroBatch * scenario.accumulation();
        long reduced = (reducedPerMicroBatch + acrossPerMicroBatch) * scenario.accumulation();
        if (sharded) {
            reduced += 2 * 4 * (n - 1) / n; // the squared norm's all-reduce, measured every step
        }
        SentBytes kinds =
                new SentBytes(
                        gatheredPerMicroBatch * scenario.accumulation(),
                        scatteredPerMicroBatch * scenario.accumulation(),
                        reduced,
                        0);
        long sent = kinds.total();
        String what = scenario.describe();
        assertEquals(unsharded, stats.unshardedParameterBytes(), what + ": unsharded bytes");
        assertEquals(parameters, stats.parameterBytes(), what + ": parameter bytes");
        assertEquals(gradients, stats.gradientBytes(), what + ": gradient bytes");
        // SGD with momentum keeps one array per trainable shard, AdamW two.
        assertEquals(
                (scenario.adam() ? 2 : 1) * gradients,
                stats.optimizerStateBytes(),
                what + ": optimizer state bytes");
        assertEquals(sent, stats.sentBytesLastStep(), what + ": bytes sent per step");
        assertEquals(kinds, stats.sentByKindLastStep(), what + ": bytes sent per step by kind");
        assertEquals(across, stats.sentAcrossBytesLastStep(), what + ": bytes sent across");
        // Every step ends in at least one collective that the rank waits for.
        assertTrue(
                sent == 0 || stats.waitNanosLastStep() > 0,
                what + ": waited " + stats.waitNanosLastStep() + " ns");
        if (sharded) {
            // 1/N of a replica, plus at most N-1 padding elements per flat parameter.
            assertTrue(parameters * n <= unsharded + flats * (n - 1) * 4, what + ": 1/N");
        }
    }
}
