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

    /** Two levels of zoo blocks: a projection inside a block inside this one. */
    private static final class Outer extends HfBlock {
        Outer() {
            addChild("inner", new Inner());
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            return child("inner").forward(ps, inputs, training, p);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    private static final class Inner extends HfBlock {
        Inner() {
            addChild("proj", new Linear(4, 4, true, 0.02f));
        }

        @Override
        protected NDList forwardInternal(
                ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> p) {
            return child("proj").forward(ps, inputs, training, p);
        }

        @Override
        public Shape[] getOutputShapes(Shape[] inputShapes) {
            return inputShapes;
        }
    }

    @Test
    void isInitializedAsDjlDecidesItForTheWholeSubtree() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Outer outer = new Outer();
            assertFalse(outer.isInitialized(), "no input shapes yet");
            outer.initialize(manager, DataType.FLOAT32, new Shape(2, 4));
            assertTrue(outer.isInitialized());

            // A child swapped in after initialization (as LoRA and FSDP swap them) whose
            // parameters are not initialized leaves every ancestor uninitialized, as DJL's own
            // check (through getParameters) finds it.
            Linear fresh = new Linear(4, 4, true, 0.02f);
            Block inner = outer.child("inner");
            BlockChildren.replace(inner, ((Inner) inner).child("proj"), fresh);
            assertFalse(outer.isInitialized());
            assertFalse(inner.isInitialized());
            fresh.initialize(manager, DataType.FLOAT32, new Shape(2, 4));
            assertTrue(outer.isInitialized());
        }
    }
}
