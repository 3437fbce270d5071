package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.trainer.ExistingPrograms.Figures;
import ai.djl.fsdp.trainer.ExistingPrograms.Program;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Existing DJL programs under FSDP on 2 ranks (real processes) against DJL's own trainer on the
 * global batch: BatchNorm's running statistics in every strategy, the evaluators' global figures,
 * the saved model read by {@code Model.load}, and the sharded checkpoint resumed.
 */
class ExistingProgramsTest {

    private static final int WORLD_SIZE = 2;

    /**
     * How far the FSDP run's running statistics may be from DJL's on the global batch: each rank
     * normalizes its half-batch with its own batch statistics (the default; SyncBatchNormTest
     * covers the synchronized ones), so the trajectories part a little: measured 0.072 (relative to
     * values above 1, absolute below) after 8 steps, in every strategy.
     */
    private static final double RUNNING_STATISTICS_TOLERANCE = 0.15;

    /**
     * The same with float16 compute (blocks update float16 copies of the float32 statistics);
     * measured 0.0012.
     */
    private static final double FLOAT16_TOLERANCE = 0.01;

    /** Float32 summation order: the figures of a model without BatchNorm. */
    private static final double FIGURE_TOLERANCE = 1e-5;

    private static Path directory;

    @BeforeAll
    static void runJob() throws Exception {
        List<String> runs = new ArrayList<>();
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            if (strategy.isHybrid()) {
                continue; // HybridShardingTest
            }
            runs.add(Program.RESNET + ":" + strategy);
        }
        runs.add(Program.TOKENS + ":" + ShardingStrategy.FULL_SHARD + ":fp16");
        runs.add(Program.MLP + ":" + ShardingStrategy.FULL_SHARD);
        runs.add(Program.REGRESSION + ":" + ShardingStrategy.SHARD_GRAD_OP);
        directory = ExistingProgramsRankMain.runJob("fsdp-existing-programs", WORLD_SIZE, runs);
    }

    private static Figures rank(Program program, ShardingStrategy strategy, int rank)
            throws Exception {
        return Figures.read(directory.resolve(program + "-" + strategy + "-rank" + rank + ".json"));
    }

    private static Figures reference(Program program) throws Exception {
        return ExistingPrograms.fit(
                program,
                null,
                null,
                MixedPrecision.FP32,
                ExistingPrograms.Variant.ORDINARY,
                directory.resolve(program + "-plain"),
                null);
    }

    @Test
    void resnetRunningStatisticsInEveryStrategy() throws Exception {
        Figures plain = reference(Program.RESNET);
        for (ShardingStrategy strategy : ShardingStrategy.values()) {
            if (strategy.isHybrid()) {
                continue; // HybridShardingTest
            }
            String what = "ResNetV1 " + strategy;
            Figures rank0 = rank(Program.RESNET, strategy, 0);
            Figures rank1 = rank(Program.RESNET, strategy, 1);
            assertEquals(plain.buffers.keySet(), rank0.buffers.keySet(), what);
            assertTrue(rank0.buffers.size() > 30, what + ": BatchNorm's statistics are buffers");
            // The statistics moved from their initial values (mean 0, variance 1)...
            for (Map.Entry<String, float[]> buffer : rank0.buffers.entrySet()) {
                float initial = buffer.getKey().endsWith("runningMean") ? 0f : 1f;
                boolean moved = false;
                for (float value : buffer.getValue()) {
                    moved |= value != initial;
                }
                assertTrue(moved, what + ": " + buffer.getKey() + " was never updated");
            }
            // ...are the same on both ranks, with the parameters...
            assertEquals(0, ExistingPrograms.maxDifference(rank0.buffers, rank1.buffers), what);
            assertEquals(
                    0, ExistingPrograms.maxDifference(rank0.parameters, rank1.parameters), what);
            // ...and close to DJL's on the global batch.
            double difference =
                    ExistingPrograms.maxRelativeDifference(plain.buffers, rank0.buffers);
            System.out.printf(
                    "%s: running statistics differ from DJL's by %.4g%n", what, difference);
            assertTrue(
                    difference < RUNNING_STATISTICS_TOLERANCE,
                    what + ": running statistics differ from DJL's by " + difference);
            // Recomputing a unit in backward (FULL_SHARD) does not count its batch twice.
            Figures withoutRecompute = rank(Program.RESNET, ShardingStrategy.SHARD_GRAD_OP, 0);
            assertTrue(
                    ExistingPrograms.maxDifference(rank0.buffers, withoutRecompute.buffers) < 1e-5,
                    what + ": the statistics of a run without recompute");
            // The model saved after training loads in plain DJL and predicts what the rank's did.
            assertArrayEquals(rank0.predictions, rank0.loadedPredictions, 1e-6f, what);
            assertArrayEquals(rank0.predictions, rank1.predictions, 0f, what);
            // The sharded checkpoint resumes the buffers and parameters exactly.
            Map<String, float[]> trained = new java.util.LinkedHashMap<>(rank0.parameters);
            trained.putAll(rank0.buffers);
            assertEquals(0, ExistingPrograms.maxDifference(trained, rank0.resumed), what);
            assertEquals(0, ExistingPrograms.maxDifference(trained, rank1.resumed), what);
            // The figures are global: the same on both ranks, near DJL's.
            assertEquals(rank0.validateLoss, rank1.validateLoss, 0, what);
            assertEquals(rank0.trainLoss, rank1.trainLoss, 0, what);
            assertEquals(rank0.validateAccuracy, rank1.validateAccuracy, 0, what);
            System.out.printf(
                    "%s: validation loss %.4f (DJL %.4f), accuracy %.3f (DJL %.3f)%n",
                    what,
                    rank0.validateLoss,
                    plain.validateLoss,
                    rank0.validateAccuracy,
                    plain.validateAccuracy);
        }
    }

    @Test
    void float16ComputeUpdatesTheFloat32Statistics() throws Exception {
        Figures plain = reference(Program.TOKENS);
        Path file = directory.resolve(Program.TOKENS + "-" + ShardingStrategy.FULL_SHARD + "-fp16");
        Figures rank0 = Figures.read(Path.of(file + "-rank0.json"));
        Figures rank1 = Figures.read(Path.of(file + "-rank1.json"));
        assertEquals(plain.buffers.keySet(), rank0.buffers.keySet());
        assertEquals(0, ExistingPrograms.maxDifference(rank0.buffers, rank1.buffers));
        double difference = ExistingPrograms.maxRelativeDifference(plain.buffers, rank0.buffers);
        System.out.printf("TOKENS FULL_SHARD fp16: statistics differ by %.4g%n", difference);
        assertTrue(difference < FLOAT16_TOLERANCE, "fp16 statistics differ by " + difference);
        Map<String, float[]> trained = new java.util.LinkedHashMap<>(rank0.parameters);
        trained.putAll(rank0.buffers);
        assertEquals(0, ExistingPrograms.maxDifference(trained, rank0.resumed));
    }

    @Test
    void mlpFiguresAreDjlsOnTheGlobalBatch() throws Exception {
        assertSameFigures(Program.MLP, ShardingStrategy.FULL_SHARD);
    }

    @Test
    void regressionFiguresAreDjlsOnTheGlobalBatch() throws Exception {
        assertSameFigures(Program.REGRESSION, ShardingStrategy.SHARD_GRAD_OP);
    }

    private static void assertSameFigures(Program program, ShardingStrategy strategy)
            throws Exception {
        Figures plain = reference(program);
        for (int r = 0; r < WORLD_SIZE; r++) {
            Figures fsdp = rank(program, strategy, r);
            String what = program + " " + strategy + " rank " + r;
            assertEquals(plain.trainLoss, fsdp.trainLoss, FIGURE_TOLERANCE, what + " train loss");
            assertEquals(
                    plain.validateLoss, fsdp.validateLoss, FIGURE_TOLERANCE, what + " validation");
            assertEquals(plain.trainAccuracy, fsdp.trainAccuracy, FIGURE_TOLERANCE, what);
            assertEquals(plain.validateAccuracy, fsdp.validateAccuracy, FIGURE_TOLERANCE, what);
            assertTrue(
                    ExistingPrograms.maxDifference(plain.parameters, fsdp.parameters) < 1e-5,
                    what + " parameters");
            assertArrayEquals(fsdp.predictions, fsdp.loadedPredictions, 1e-6f, what);
        }
    }
}
