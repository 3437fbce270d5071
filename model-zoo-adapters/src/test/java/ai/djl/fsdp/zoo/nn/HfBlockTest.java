package ai.djl.fsdp.zoo.nn;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import org.junit.jupiter.api.Test;

class HfBlockTest {

    /** A zoo block around one child, as a decoder layer holds its attention. */
    private static final class Wrapper extends HfBlock {

        Wrapper(Block child) {
            addChild("child", child);
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            return child("child").forward(ps, inputs, training, p);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    @Test
    void isInitializedAsDjlDecidesItForTheWholeSubtree() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Wrapper outer = new Wrapper(new Wrapper(new Linear(4, 4, true, 0.02f)));
            assertFalse(outer.isInitialized(), "no input shapes yet");
            outer.initialize(manager, DataType.FLOAT32, new Shape(2, 4));
            assertTrue(outer.isInitialized());

            // A child swapped in after initialization (as LoRA and FSDP swap them) whose
            // parameters are not initialized leaves every ancestor uninitialized, as DJL's own
            // check (through getParameters) finds it.
            Linear fresh = new Linear(4, 4, true, 0.02f);
            Wrapper inner = (Wrapper) outer.child("child");
            BlockChildren.replace(inner, inner.child("child"), fresh);
            assertFalse(outer.isInitialized());
            assertFalse(inner.isInitialized());
            fresh.initialize(manager, DataType.FLOAT32, new Shape(2, 4));
            assertTrue(outer.isInitialized());
        }
    }
}
