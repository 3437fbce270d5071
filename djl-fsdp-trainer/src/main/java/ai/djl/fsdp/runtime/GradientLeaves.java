package ai.djl.fsdp.runtime;

import ai.djl.fsdp.param.FlatLayout;
import ai.djl.fsdp.tensor.Autograd;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.List;

/**
 * The autograd leaves a trainable flat buffer's gradient arrives on in one unit call: one leaf per
 * parameter, each sharing storage with the parameter's piece of the gathered buffer, and the flat
 * gradient made from them for the reduction.
 *
 * <p>Not one leaf for the whole buffer sliced into the parameters' views: libtorch's backward of a
 * slice makes a zero-filled array the size of the whole buffer for each parameter and sums them (a
 * dozen buffer-sized fills and additions per unit, each on freshly faulted pages). Here each
 * parameter's gradient has its own size, and {@link #flatGradient} copies them once into the flat
 * array the reduction reads.
 */
final class GradientLeaves {

    private final FlatLayout layout;
    private final List<NDArray> leaves;

    private GradientLeaves(FlatLayout layout, List<NDArray> leaves) {
        this.layout = layout;
        this.leaves = leaves;
    }

    /**
     * Makes a leaf of each parameter's view into {@code base}, owned by {@code scope}.
     *
     * @param layout where the parameters lie in {@code base}
     * @param base the buffer the unit computes with, padded full size
     * @param scope the call's manager
     * @return the leaves
     */
    static GradientLeaves of(FlatLayout layout, NDArray base, NDManager scope) {
        List<NDArray> views = layout.viewsOf(base);
        List<NDArray> leaves = new ArrayList<>(views.size());
        for (NDArray view : views) {
            NDArray leaf = view.stopGradient();
            leaf.attach(scope);
            leaf.setRequiresGradient(true);
            leaves.add(leaf);
            view.close();
        }
        return new GradientLeaves(layout, leaves);
    }

    /** Returns the parameters' leaves, in buffer order: the arrays the unit computes with. */
    List<NDArray> views() {
        return leaves;
    }

    /**
     * Copies the gradients backward left on the leaves into one flat array of the buffer's padded
     * size in {@code type}: zeros where none arrived and in the padding.
     *
     * @param type the element type of the flat gradient
     * @param scope the manager of the flat gradient
     * @return the flat gradient
     */
    NDArray flatGradient(Precision type, NDManager scope) {
        long padded = layout.getPaddedNumel();
        NDArray flat = type.empty(scope, new Shape(padded));
        try (NDManager scratch = scope.newSubManager()) {
            NDArray zero = null;
            List<NDArray> views = layout.viewsOf(flat);
            for (int i = 0; i < leaves.size(); i++) {
                NDArray view = views.get(i);
                view.attach(scratch);
                NDArray gradient = Autograd.gradientOf(leaves.get(i));
                if (gradient != null) {
                    gradient.attach(scratch);
                    TensorMemory.copy(gradient, view);
                } else {
                    zero = zero != null ? zero : scratch.zeros(new Shape(), DataType.FLOAT32);
                    TensorMemory.copy(zero, view);
                }
            }
            if (padded > layout.getNumel()) {
                NDArray padding = flat.get(new NDIndex("{}:", layout.getNumel()));
                padding.attach(scratch);
                TensorMemory.copy(scratch.zeros(new Shape(), DataType.FLOAT32), padding);
            }
        }
        return flat;
    }
}
