package ai.djl.fsdp.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import org.junit.jupiter.api.Test;

/**
 * A large frozen parameter drawn a piece of rows at a time holds, in bfloat16, the whole float32
 * draw rounded to bfloat16, bit for bit, and leaves the generator where the whole draw leaves it:
 * for rows of a multiple of libtorch's run of 16 values, of a multiple of 8 and of an odd length, a
 * last piece too short to stand alone, and one axis. Small, trainable or otherwise drawn parameters
 * are drawn whole.
 */
class PiecewiseDrawsTest {

    private static final int SEED = 13;

    @Test
    void piecesHoldTheWholeDraw() {
        long piece = ShardLoader.PIECE;
        long[][] shapes = {
            {2 * piece / 5120 + 3, 5120},
            {piece / 1000 + 7, 1000},
            {piece / 999 + 1, 999},
            {piece / 8 + 1, 8},
            {piece + 3}
        };
        try (NDManager manager = NDManager.newBaseManager();
                PiecewiseDraws draws = new PiecewiseDraws(Precision.BFLOAT16)) {
            for (long[] dims : shapes) {
                Shape shape = new Shape(dims);
                Initializer normal = new NormalInitializer(0.02f);
                Engine.getInstance().setRandomSeed(SEED);
                float[] whole;
                float next;
                try (NDArray drawn = normal.initialize(manager, shape, DataType.FLOAT32);
                        NDArray rounded = Precision.BFLOAT16.cast(drawn);
                        NDArray back = Precision.FLOAT32.cast(rounded)) {
                    whole = back.toFloatArray();
                    next = manager.randomUniform(0f, 1f, new Shape(1)).getFloat();
                }
                Parameter parameter = frozen(shape, normal);
                assertTrue(draws.draws(parameter), shape.toString());
                Engine.getInstance().setRandomSeed(SEED);
                NDArray placeholder =
                        draws.initializer(parameter).initialize(manager, shape, DataType.FLOAT32);
                assertEquals(
                        next,
                        manager.randomUniform(0f, 1f, new Shape(1)).getFloat(),
                        "the generator is where the whole draw leaves it, " + shape);
                assertEquals(shape, placeholder.getShape());
                try (NDManager scope = manager.newSubManager()) {
                    NDArray read = draws.read(scope, parameter, 0, shape.size());
                    assertArrayEquals(
                            whole, Precision.FLOAT32.cast(read).toFloatArray(), shape.toString());
                }
                draws.release(parameter);
                assertNull(draws.read(manager, parameter, 0, 1), "released");
            }
        }
    }

    @Test
    void drawsOnlyLargeFrozenNormalParameters() {
        PiecewiseDraws draws = new PiecewiseDraws(Precision.BFLOAT16);
        Shape large = new Shape(ShardLoader.PIECE + 1);
        Initializer normal = new NormalInitializer(0.02f);
        assertTrue(draws.draws(frozen(large, normal)));
        assertFalse(draws.draws(frozen(new Shape(ShardLoader.PIECE), normal)), "small");
        assertFalse(draws.draws(frozen(large, Initializer.ONES)), "not a normal draw");
        Parameter trainable =
                Parameter.builder()
                        .setName("t")
                        .setType(Parameter.Type.WEIGHT)
                        .optShape(large)
                        .optInitializer(normal)
                        .build();
        assertFalse(draws.draws(trainable), "trainable");
    }

    private static Parameter frozen(Shape shape, Initializer initializer) {
        return Parameter.builder()
                .setName("w")
                .setType(Parameter.Type.WEIGHT)
                .optShape(shape)
                .optInitializer(initializer)
                .optRequiresGrad(false)
                .build();
    }
}
