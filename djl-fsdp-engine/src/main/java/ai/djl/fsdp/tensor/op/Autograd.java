package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.JniUtils;
import java.util.function.Supplier;

/**
 * Autograd where DJL's API stops short: grad mode, vector-Jacobian products from any array with any
 * gradient, and reading a leaf's gradient safely.
 *
 * <p>Why libtorch's JNI directly: DJL exposes backward only as {@code
 * GradientCollector.backward(loss)} (all-ones gradient, graph freed), and grad mode only through an
 * open collector, of which one may exist at a time. FSDP's backward tape needs products from a
 * unit's outputs with gradients that are not all ones, keeping the graph, and units that run
 * forward without a graph inside the user's collector.
 */
public final class Autograd {

    private Autograd() {}

    /** Returns whether operations record a graph now. */
    public static boolean isGradMode() {
        return JniUtils.isGradMode();
    }

    /**
     * Runs {@code body} with grad mode set to {@code enabled}, then restores the previous mode.
     *
     * @param enabled whether operations in {@code body} record a graph
     * @param body what to run
     * @param <T> the result type
     * @return what {@code body} returned
     */
    public static <T> T withGradMode(boolean enabled, Supplier<T> body) {
        boolean previous = JniUtils.isGradMode();
        JniUtils.setGradMode(enabled);
        try {
            return body.get();
        } finally {
            JniUtils.setGradMode(previous);
        }
    }

    /**
     * Runs a vector-Jacobian product from {@code output} with {@code gradient}, keeping the graph
     * for later products through shared parts.
     *
     * @param output an array in a graph
     * @param gradient the gradient of the loss with respect to {@code output}
     */
    public static void backward(NDArray output, NDArray gradient) {
        JniUtils.backward((PtNDArray) output, (PtNDArray) gradient, true, false);
    }

    /**
     * Returns whether {@code array} is part of a graph: a leaf that requires a gradient, or a
     * result computed from one with grad mode on (it has a {@code grad_fn}).
     *
     * <p>DJL's {@code hasGradient} answers for leaves only (false for a result with a {@code
     * grad_fn}) and keeps its first answer; whether an array is a leaf comes from libtorch's
     * dispatcher ({@code aten::is_leaf}).
     *
     * @param array any PyTorch-engine array
     * @return whether a gradient can be pushed into it
     */
    public static boolean isInGraph(NDArray array) {
        return JniUtils.requiresGrad((PtNDArray) array) || !isLeaf(array);
    }

    private static boolean isLeaf(NDArray array) {
        // is_leaf(Tensor self) -> bool
        return DispatcherCall.of("aten::is_leaf", 1).tensor(array).callForBoolean();
    }

    /**
     * Pushes {@code gradient} into {@code input} and through the graph that produced it.
     *
     * @param input an array that may be part of a graph
     * @param gradient its gradient
     * @return false if {@code input} is not part of a graph (nothing is done)
     */
    public static boolean pushInto(NDArray input, NDArray gradient) {
        // Asked first: libtorch's refusal is an error whose message symbolizes a native stack
        // trace, milliseconds of host time.
        if (!isInGraph(input)) {
            return false;
        }
        backward(input, gradient);
        return true;
    }

    /**
     * Returns the gradient backward left on {@code leaf}, or null if none reached it (DJL's {@code
     * getGradient} would make zeros of its own type instead).
     *
     * @param leaf an array that requires a gradient
     * @return its gradient, or null
     */
    public static NDArray gradientOf(NDArray leaf) {
        if (!JniUtils.requiresGrad((PtNDArray) leaf)) {
            return null;
        }
        return JniUtils.getGradient((PtNDArray) leaf);
    }

    /**
     * Zeroes the gradient libtorch keeps on a leaf ({@code PtGradientCollector} does not: upstream
     * disabled it for speed).
     *
     * @param leaf an array that requires a gradient
     */
    public static void zeroGradient(NDArray leaf) {
        JniUtils.zeroGrad((PtNDArray) leaf);
    }
}
