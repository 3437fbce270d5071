package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

/** What is in a graph, pushing a gradient into it, and reading a leaf's gradient. */
class AutogradTest {

    @Test
    void tellsGraphArraysFromConstantsAndPushesOnlyIntoGraphs() {
        try (NDManager manager = NDManager.newBaseManager()) {
            NDArray leaf = manager.arange(0f, 4f);
            leaf.setRequiresGradient(true);
            NDArray result = Autograd.withGradMode(true, () -> leaf.mul(leaf));
            NDArray noGraph = Autograd.withGradMode(false, () -> leaf.mul(leaf));
            NDArray constant = manager.ones(new Shape(4));
            // A result with a grad_fn is in the graph though DJL's requires-grad query (behind
            // hasGradient) says no: why isInGraph also asks libtorch's is_leaf.
            assertFalse(result.hasGradient());
            assertTrue(Autograd.isInGraph(leaf));
            assertTrue(Autograd.isInGraph(result));
            assertFalse(Autograd.isInGraph(noGraph));
            assertFalse(Autograd.isInGraph(constant));
            assertFalse(Autograd.isInGraph(leaf.stopGradient()));

            assertNull(Autograd.gradientOf(leaf), "no backward yet: no gradient");
            assertFalse(Autograd.pushInto(constant, manager.ones(new Shape(4))));
            assertTrue(Autograd.pushInto(result, manager.ones(new Shape(4))));
            // d(x * x)/dx = 2x.
            assertArrayEquals(
                    new float[] {0, 2, 4, 6}, Autograd.gradientOf(leaf).toFloatArray(), 0f);
            assertNull(Autograd.gradientOf(constant), "a constant has no gradient");
        }
    }
}
