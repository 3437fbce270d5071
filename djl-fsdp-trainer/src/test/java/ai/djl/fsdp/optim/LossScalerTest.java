package ai.djl.fsdp.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.GradientCollector;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The loss scaler's state machine, and its agreement on overflow across real rank processes. */
class LossScalerTest {

    private static final LossScaler.Settings SETTINGS =
            LossScaler.Settings.DEFAULTS.withInitialScale(1024f).withGrowthInterval(3);

    @Test
    void backsOffAtAnOverflowAndGrowsAfterTheInterval() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            LossScaler scaler = new LossScaler(SETTINGS, group);
            assertEquals(1024f, scaler.getScale());
            assertTrue(scaler.update(true));
            assertEquals(512f, scaler.getScale());
            assertEquals(1, scaler.getSkippedSteps());
            assertTrue(scaler.update(false));
            assertTrue(scaler.update(false));
            assertEquals(512f, scaler.getScale(), "two good steps are fewer than the interval");
            assertEquals(2, scaler.getGoodSteps());
            assertEquals(0, scaler.getSkippedSteps());
            assertTrue(scaler.update(false));
            assertEquals(1024f, scaler.getScale(), "the third good step doubles the scale");
            assertEquals(0, scaler.getGoodSteps());
            scaler.update(false);
            scaler.update(true); // an overflow restarts the count of good steps
            assertEquals(0, scaler.getGoodSteps());
            assertEquals(512f, scaler.getScale());
        }
    }

    @Test
    void scalesAFloat16LossInFloat32KeepingNoCopyOfIt() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            LossScaler scaler = new LossScaler(SETTINGS, group);
            NDArray x = manager.create(new float[] {0.5f, 2f});
            x.setRequiresGradient(true);
            try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
                NDArray loss = Precision.FLOAT16.cast(x.sum());
                int before = manager.getManagedArrays().size();
                NDArray scaled = scaler.scale(loss);
                assertEquals(
                        before + 1,
                        manager.getManagedArrays().size(),
                        "only the scaled loss is left, not its float32 cast");
                assertEquals(DataType.FLOAT32, scaled.getDataType());
                assertEquals(2.5f * 1024f, scaled.getFloat());
                collector.backward(scaled);
            }
            assertArrayEquals(new float[] {1024f, 1024f}, x.getGradient().toFloatArray());
        }
    }

    @Test
    void reportsAScaleBelowItsFloorAndNeverGrowsToInfinity() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            LossScaler scaler = new LossScaler(SETTINGS.withMinScale(512f), group);
            assertTrue(scaler.update(true), "512 is the floor itself");
            assertFalse(scaler.update(true), "256 is below the floor");
            assertEquals(2, scaler.getSkippedSteps());
            LossScaler huge =
                    new LossScaler(
                            SETTINGS.withInitialScale(Float.MAX_VALUE).withGrowthInterval(1),
                            group);
            huge.update(false);
            assertEquals(Float.MAX_VALUE, huge.getScale());
        }
    }

    @Test
    void unscalesAndFindsNonFiniteValues() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                NDManager manager = NDManager.newBaseManager()) {
            LossScaler scaler = new LossScaler(SETTINGS, group);
            NDArray a = manager.create(new float[] {1024f, -2048f});
            NDArray b = manager.create(new float[] {512f});
            assertFalse(scaler.unscale(List.of(a, b)));
            assertEquals(List.of(1f, -2f), List.of(a.getFloat(0), a.getFloat(1)));
            assertEquals(0.5f, b.getFloat(0));
            for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY}) {
                NDArray c = manager.create(new float[] {1f, bad});
                assertTrue(scaler.unscale(List.of(a, c)), "found " + bad);
            }
        }
    }

    @Test
    void restoresAndChecksSavedState() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            LossScaler scaler = new LossScaler(SETTINGS, group);
            scaler.restore(64f, 2);
            assertEquals(64f, scaler.getScale());
            scaler.update(false);
            assertEquals(128f, scaler.getScale(), "the restored good steps count");
            assertThrows(IllegalArgumentException.class, () -> scaler.restore(0f, 0));
            assertThrows(IllegalArgumentException.class, () -> scaler.restore(1f, -1));
        }
    }

    @Test
    void refusesSettingsOutOfRange() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> new LossScaler.Settings(1f, 2f, 1.5f, 10, 1f));
        assertTrue(e.getMessage().contains("backoffFactor = 1.5"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SETTINGS.withGrowthInterval(0));
        assertThrows(IllegalArgumentException.class, () -> SETTINGS.withMinScale(2048f));
        assertThrows(
                IllegalArgumentException.class,
                () -> SETTINGS.withInitialScale(Float.POSITIVE_INFINITY));
    }

    @Test
    void everyRankSkipsWhenOneRankOverflows() {
        try (RankProcesses job =
                RankProcesses.builder(LossScalerRankMain.class)
                        .worldSize(2)
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            for (int rank = 0; rank < 2; rank++) {
                assertTrue(
                        results.rank(rank).output().contains("agreed"),
                        results.rank(rank).output());
            }
        }
    }
}
