package ai.djl.fsdp.unit;

import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;

/** Reading and pushing gradients where DJL's API stops short of autograd. */
final class Gradients {

    private Gradients() {}

    /**
     * Returns the gradient backward left on {@code leaf}, or null if none reached it (DJL throws
     * for a leaf whose {@code .grad} is undefined).
     */
    static NDArray of(NDArray leaf) {
        if (!leaf.hasGradient()) {
            return null;
        }
        try {
            return leaf.getGradient();
        } catch (IllegalStateException e) {
            return null;
        }
    }

    /**
     * Runs a vector-Jacobian product from {@code output} with {@code gradient}, keeping the graph
     * for later products through shared parts.
     */
    static void backward(NDArray output, NDArray gradient) {
        JniUtils.backward((PtNDArray) output, (PtNDArray) gradient, true, false);
    }

    /**
     * Pushes {@code gradient} into {@code input} and through the graph that produced it. Returns
     * false if {@code input} is not part of a graph (a data array, say): libtorch reports that only
     * by failing, as no DJL call tells an attached intermediate from a constant safely.
     */
    static boolean pushInto(NDArray input, NDArray gradient) {
        try {
            backward(input, gradient);
            return true;
        } catch (EngineException e) {
            if (String.valueOf(e.getMessage()).contains("does not require grad")) {
                return false;
            }
            throw e;
        }
    }
}
