package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher call of libtorch's fused attention: autograd through it, its mask and causal
 * arguments, and bfloat16 inputs. The zoo's {@code AttentionKernelTest} compares it with the
 * explicit attention on the models.
 */
class FusedAttentionTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(13);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void causalFlagEqualsACausalMaskWithGradients() {
        NDArray q = manager.randomNormal(new Shape(2, 2, 10, 8));
        NDArray k = manager.randomNormal(new Shape(2, 2, 10, 8));
        NDArray v = manager.randomNormal(new Shape(2, 2, 10, 8));
        NDArray rows = manager.arange(10).reshape(10, 1);
        NDArray cols = manager.arange(10).reshape(1, 10);
        NDArray mask = cols.gt(rows).toType(DataType.FLOAT32, false).mul(-1e30f);

        NDArray[] flagged = run(q, k, v, null, true);
        NDArray[] masked = run(q, k, v, mask, false);
        for (int i = 0; i < flagged.length; i++) {
            float diff = flagged[i].sub(masked[i]).abs().max().getFloat();
            assertTrue(diff < 1e-5f, "result " + i + " differs by " + diff);
        }
        // The gradients exist and are not trivially zero.
        assertTrue(flagged[1].abs().sum().getFloat() > 0);
    }

    @Test
    void bfloat16InputsGiveBfloat16OutputsNearFloat32() {
        NDArray q = manager.randomNormal(new Shape(1, 2, 16, 8));
        NDArray k = manager.randomNormal(new Shape(1, 2, 16, 8));
        NDArray v = manager.randomNormal(new Shape(1, 2, 16, 8));
        NDArray exact = FusedAttention.scaledDotProduct(q, k, v, null, 0, true);
        NDArray reduced =
                FusedAttention.scaledDotProduct(
                        Precision.BFLOAT16.cast(q),
                        Precision.BFLOAT16.cast(k),
                        Precision.BFLOAT16.cast(v),
                        null,
                        0,
                        true);
        assertEquals(Precision.BFLOAT16, Precision.ofArray(reduced));
        // Outputs are convex combinations of |v| <= max|v|: a few bfloat16 roundings of that.
        float scale = v.abs().max().getFloat();
        float error = Precision.FLOAT32.cast(reduced).sub(exact).abs().max().getFloat();
        assertTrue(error < scale * 4 / 128, "error " + error + " of " + scale);
    }

    @Test
    void maskAndCausalTogetherAreRejected() {
        NDArray x = manager.randomNormal(new Shape(1, 1, 4, 4));
        IllegalArgumentException error =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> FusedAttention.scaledDotProduct(x, x, x, x, 0, true));
        assertTrue(error.getMessage().contains("causal"), error.getMessage());
    }

    /** Returns the output and the three input gradients for an output gradient of ones. */
    private NDArray[] run(NDArray q, NDArray k, NDArray v, NDArray mask, boolean causal) {
        NDArray[] leaves = {q.duplicate(), k.duplicate(), v.duplicate()};
        for (NDArray leaf : leaves) {
            leaf.setRequiresGradient(true);
        }
        NDArray y;
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            y = FusedAttention.scaledDotProduct(leaves[0], leaves[1], leaves[2], mask, 0, causal);
            collector.backward(y.mul(y).sum());
        }
        return new NDArray[] {
            y.stopGradient(),
            leaves[0].getGradient(),
            leaves[1].getGradient(),
            leaves[2].getGradient()
        };
    }
}
