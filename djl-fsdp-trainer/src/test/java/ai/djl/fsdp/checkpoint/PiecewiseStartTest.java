package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.initializer.NormalInitializer;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A fresh model whose frozen table is drawn in pieces into bfloat16 ({@link PiecewiseDraws}) starts
 * under FSDP with the table DJL draws whole for the seed, rounded to bfloat16, bit for bit: on one
 * rank, and on two under {@code sync_module_states}, where rank 0 sends its pieces and rank 1 draws
 * nothing.
 */
class PiecewiseStartTest {

    @Test
    void oneRank() {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            assertArrayEquals(expected(), PiecewiseStartRankMain.start(group));
        }
    }

    @Test
    void twoRanks(@TempDir Path directory) throws IOException {
        try (RankProcesses job =
                RankProcesses.builder(PiecewiseStartRankMain.class)
                        .worldSize(2)
                        .args(directory.toString())
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            job.await().assertAllSucceeded();
        }
        float[] expected = expected();
        for (int rank = 0; rank < 2; rank++) {
            assertArrayEquals(expected, read(directory.resolve("rank" + rank)), "rank " + rank);
        }
    }

    /** The table drawn whole in float32 for the seed, rounded to bfloat16. */
    private static float[] expected() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Engine.getInstance().setRandomSeed(PiecewiseStartRankMain.SEED);
            NDArray whole =
                    new NormalInitializer(PiecewiseStartRankMain.SIGMA)
                            .initialize(
                                    manager,
                                    new Shape(
                                            PiecewiseStartRankMain.ROWS,
                                            PiecewiseStartRankMain.COLUMNS),
                                    DataType.FLOAT32);
            return Precision.FLOAT32.cast(Precision.BFLOAT16.cast(whole)).toFloatArray();
        }
    }

    private static float[] read(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            float[] values = new float[in.readInt()];
            for (int i = 0; i < values.length; i++) {
                values[i] = in.readFloat();
            }
            return values;
        }
    }
}
