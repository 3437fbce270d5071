package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * libtorch's linear through the dispatcher against DJL's product and add: the output and the
 * gradients of input, weight and bias, for an input-major weight read through a transposed view.
 */
class FusedLinearTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(31);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void threeDimensionalInputEqualsProductPlusBias() {
        compare(new Shape(3, 5, 24), true);
    }

    @Test
    void twoDimensionalInputEqualsProductPlusBias() {
        compare(new Shape(7, 24), true);
    }

    @Test
    void withoutBiasEqualsTheProduct() {
        compare(new Shape(3, 5, 24), false);
    }

    /** Runs both forms on the same values; {@code x W + b} with {@code W [in, out]}. */
    private void compare(Shape inputShape, boolean withBias) {
        NDArray x = manager.randomNormal(inputShape);
        NDArray w = manager.randomNormal(new Shape(24, 40));
        NDArray b = withBias ? manager.randomNormal(new Shape(40)) : null;
        NDArray weights =
                manager.randomNormal(inputShape.slice(0, inputShape.dimension() - 1).add(40));
        NDArray[] fused = run(x, w, b, weights, true);
        NDArray[] composed = run(x, w, b, weights, false);
        assertEquals(composed[0].getShape(), fused[0].getShape());
        String[] names = {"output", "input gradient", "weight gradient", "bias gradient"};
        for (int i = 0; i < fused.length; i++) {
            if (composed[i] == null) {
                assertNull(fused[i]);
                continue;
            }
            float diff = fused[i].sub(composed[i]).abs().max().getFloat();
            float scale = composed[i].abs().max().getFloat();
            // Float sums in another order: a few roundings of the largest term.
            assertTrue(diff <= 1e-5f * scale, names[i] + " differs by " + diff + " of " + scale);
        }
    }

    /** Returns the output and the gradients of {@code sum(y * weights)}: x, w, b (null if none). */
    private static NDArray[] run(NDArray x, NDArray w, NDArray b, NDArray weights, boolean fused) {
        NDArray[] leaves = {x.duplicate(), w.duplicate(), b == null ? null : b.duplicate()};
        for (NDArray leaf : leaves) {
            if (leaf != null) {
                leaf.setRequiresGradient(true);
            }
        }
        NDArray y;
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            if (fused) {
                y = FusedLinear.apply(leaves[0], leaves[1].transpose(), leaves[2]);
            } else {
                NDArray product = leaves[0].matMul(leaves[1]);
                y = leaves[2] == null ? product : product.add(leaves[2]);
            }
            collector.backward(y.mul(weights).sum());
        }
        return new NDArray[] {
            y.stopGradient(),
            leaves[0].getGradient(),
            leaves[1].getGradient(),
            leaves[2] == null ? null : leaves[2].getGradient()
        };
    }
}
