package ai.djl.fsdp.runtime;

import ai.djl.fsdp.param.FlatLayout;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/**
 * The autograd leaf a trainable flat buffer's gradient arrives on in one unit call: the buffer
 * itself, with each parameter a view of it made in the graph by one split into the parameters'
 * ranges ({@link FlatLayout#viewsOf}), and the flat gradient the reduction reads.
 *
 * <p>The split's backward is one concatenation of the parameters' gradients, zeros for those none
 * reached and for the padding, inside libtorch's backward: the leaf receives the flat gradient
 * whole, with no gradient fetched per parameter. (Slicing the buffer per parameter would not do: a
 * slice's backward makes a zero-filled array the size of the whole buffer for each parameter and
 * sums them, a dozen buffer-sized fills and additions per unit, each on freshly faulted pages.)
 */
public final class GradientLeaves {

    private final FlatLayout layout;
    private final NDArray leaf;
    private final List<NDArray> views;

    private GradientLeaves(FlatLayout layout, NDArray leaf, List<NDArray> views) {
        this.layout = layout;
        this.leaf = leaf;
        this.views = views;
    }

    /**
     * Makes {@code base} a leaf and each parameter's view of it in the graph, owned by {@code
     * scope}.
     *
     * @param layout where the parameters lie in {@code base}
     * @param base the buffer the unit computes with, padded full size, in no graph (a detached
     *     alias): it becomes the leaf
     * @param scope the call's manager
     * @return the leaf and its views
     */
    public static GradientLeaves of(FlatLayout layout, NDArray base, NDManager scope) {
        base.setRequiresGradient(true);
        List<NDArray> views = Autograd.withGradMode(true, () -> layout.viewsOf(base));
        for (NDArray view : views) {
            view.attach(scope);
        }
        return new GradientLeaves(layout, base, views);
    }

    /** Returns the parameters' views, in buffer order: the arrays the unit computes with. */
    public List<NDArray> views() {
        return views;
    }

    /**
     * Returns the gradient backward left on the leaf as one flat array of the buffer's padded size
     * in {@code type} (zeros where no gradient arrived and in the padding), owned by {@code scope}.
     *
     * @param type the element type of the flat gradient
     * @param scope the manager of the flat gradient
     * @return the flat gradient, the leaf's own where it has {@code type} already
     */
    public NDArray flatGradient(Precision type, NDManager scope) {
        NDArray gradient = Autograd.gradientOf(leaf);
        if (gradient == null) {
            return type.zeros(scope, new Shape(layout.getPaddedNumel()));
        }
        NDArray flat = type.cast(gradient);
        if (flat != gradient) {
            gradient.close();
        }
        flat.attach(scope);
        return flat;
    }
}
