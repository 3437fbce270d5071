package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/**
 * The autograd leaves a trainable flat buffer's gradient arrives on in one unit call, and the flat
 * gradient the reduction reads. Two forms, by how many backward calls reach the buffer:
 *
 * <ul>
 *   <li>{@link #ofBuffer}, for a unit: the buffer itself is the leaf and the parameters' views are
 *       split from it in the graph ({@link FlatLayout#viewsOf}). The split's backward is one
 *       concatenation of the parameters' gradients, zeros for those none reached and for the
 *       padding, inside libtorch's backward: the leaf receives the flat gradient whole. A unit's
 *       graph is run once, or once more for each synchronized BatchNorm that cuts it (each a
 *       unit-sized concatenation, accumulated into the leaf's gradient).
 *   <li>{@link #ofParameters}, for the root, whose parameters receive gradients in several backward
 *       calls (the loss's, then each input gradient handed back into the root's graph): each
 *       parameter's view is a leaf of its own, accumulating in place, and the flat gradient is
 *       concatenated from them once. A split would make a buffer-sized flat gradient in every call,
 *       and the root holds the vocabulary's embedding.
 * </ul>
 *
 * <p>Not one leaf sliced per parameter: a slice's backward makes a zero-filled array the size of
 * the whole buffer for each parameter and sums them, a dozen buffer-sized fills and additions per
 * unit, each on freshly faulted pages.
 */
public final class GradientLeaves {

    private final FlatLayout layout;
    private final NDArray buffer;
    private final List<NDArray> views;

    private GradientLeaves(FlatLayout layout, NDArray buffer, List<NDArray> views) {
        this.layout = layout;
        this.buffer = buffer;
        this.views = views;
    }

    /**
     * Makes {@code base} the leaf and each parameter's view of it in the graph, owned by {@code
     * scope}: for a buffer one backward call reaches.
     *
     * @param layout where the parameters lie in {@code base}
     * @param base the buffer the unit computes with, padded full size, in no graph (a detached
     *     alias): it becomes the leaf
     * @param scope the call's manager
     * @return the leaf and its views
     */
    public static GradientLeaves ofBuffer(FlatLayout layout, NDArray base, NDManager scope) {
        base.setRequiresGradient(true);
        List<NDArray> views = Autograd.withGradMode(true, () -> layout.viewsOf(base));
        views.forEach(view -> view.attach(scope));
        return new GradientLeaves(layout, base, views);
    }

    /**
     * Makes a leaf of each parameter's view into {@code base}, owned by {@code scope}: for a buffer
     * several backward calls reach.
     *
     * @param layout where the parameters lie in {@code base}
     * @param base the buffer the unit computes with, padded full size, in no graph (a detached
     *     alias): its views are leaves themselves
     * @param scope the call's manager
     * @return the leaves
     */
    public static GradientLeaves ofParameters(FlatLayout layout, NDArray base, NDManager scope) {
        List<NDArray> views = layout.viewsOf(base);
        for (NDArray view : views) {
            view.attach(scope);
            view.setRequiresGradient(true);
        }
        return new GradientLeaves(layout, null, views);
    }

    /** Returns the parameters' views, in buffer order: the arrays the unit computes with. */
    public List<NDArray> views() {
        return views;
    }

    /**
     * Returns the flat gradient backward left, of the buffer's padded size in {@code type} (zeros
     * where no gradient arrived and in the padding), owned by {@code scope}.
     *
     * @param type the element type of the flat gradient
     * @param scope the manager of the flat gradient
     * @return the flat gradient: the buffer leaf's own where it has {@code type} already, else a
     *     new array
     */
    public NDArray flatGradient(Precision type, NDManager scope) {
        return buffer != null ? bufferGradient(type, scope) : concatenatedGradient(type, scope);
    }

    private NDArray bufferGradient(Precision type, NDManager scope) {
        NDArray gradient = Autograd.gradientOf(buffer);
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

    private NDArray concatenatedGradient(Precision type, NDManager scope) {
        long padded = layout.getPaddedNumel();
        try (NDManager scratch = scope.newSubManager()) {
            // One concatenation in the leaves' type, then one cast: libtorch concatenates arrays of
            // one type by copying memory, but converts bfloat16 to float32 inside a concatenation
            // five times slower than a cast does (a unit's 50,000 elements: 110 us, against 15 us
            // and a 15 us cast). Backward gives each gradient its leaf's type; the leaves share
            // their buffer's.
            Precision pieceType = views.isEmpty() ? type : Precision.ofArray(views.get(0));
            NDList pieces = new NDList(views.size() + 1);
            for (int i = 0; i < views.size(); i++) {
                // A gradient has its leaf's shape: the layout's, known without asking libtorch.
                Shape shape = layout.getShape(i);
                NDArray gradient = Autograd.gradientOf(views.get(i));
                if (gradient == null) {
                    pieces.add(pieceType.zeros(scratch, new Shape(shape.size())));
                    continue;
                }
                gradient.attach(scratch);
                pieces.add(shape.dimension() == 1 ? gradient : gradient.reshape(shape.size()));
            }
            if (padded > layout.getNumel()) {
                pieces.add(pieceType.zeros(scratch, new Shape(padded - layout.getNumel())));
            }
            if (pieces.size() > 1) {
                NDArray flat = type.cast(NDArrays.concat(pieces));
                flat.attach(scope);
                return flat;
            }
            // One piece is the gradient itself or a view of it: one copy, the cast's or a
            // duplicate's, not both (an untied embedding's gradient is a gigabyte).
            NDArray piece = pieces.get(0);
            NDArray flat = type.cast(piece);
            if (flat == piece) {
                flat = piece.duplicate();
            }
            flat.attach(scope);
            return flat;
        }
    }
}
