package ai.djl.fsdp.runtime;

import ai.djl.fsdp.param.FlatLayout;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/**
 * The autograd leaves a trainable flat buffer's gradient arrives on in one unit call: one leaf per
 * parameter, each sharing storage with the parameter's piece of the gathered buffer, and the flat
 * gradient made from them for the reduction.
 *
 * <p>Not one leaf for the whole buffer sliced into the parameters' views: libtorch's backward of a
 * slice makes a zero-filled array the size of the whole buffer for each parameter and sums them (a
 * dozen buffer-sized fills and additions per unit, each on freshly faulted pages). Here each
 * parameter's gradient has its own size, and {@link #flatGradient} concatenates them into the flat
 * array the reduction reads.
 */
public final class GradientLeaves {

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
     * @param base the buffer the unit computes with, padded full size, in no graph (a detached
     *     alias): its views are leaves themselves
     * @param scope the call's manager
     * @return the leaves
     */
    public static GradientLeaves of(FlatLayout layout, NDArray base, NDManager scope) {
        List<NDArray> leaves = layout.viewsOf(base);
        for (NDArray leaf : leaves) {
            leaf.attach(scope);
            leaf.setRequiresGradient(true);
        }
        return new GradientLeaves(layout, leaves);
    }

    /** Returns the parameters' leaves, in buffer order: the arrays the unit computes with. */
    public List<NDArray> views() {
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
    public NDArray flatGradient(Precision type, NDManager scope) {
        long padded = layout.getPaddedNumel();
        try (NDManager scratch = scope.newSubManager()) {
            // One concatenation in the leaves' type, then one cast: libtorch concatenates arrays of
            // one type by copying memory, but converts bfloat16 to float32 inside a concatenation
            // five times slower than a cast does (a unit's 50,000 elements: 110 us, against 15 us
            // and a 15 us cast). Backward gives each gradient its leaf's type; the leaves share
            // their buffer's.
            Precision pieceType = leaves.isEmpty() ? type : Precision.ofArray(leaves.get(0));
            NDList pieces = new NDList(leaves.size() + 1);
            for (int i = 0; i < leaves.size(); i++) {
                // A gradient has its leaf's shape: the layout's, known without asking libtorch.
                Shape shape = layout.getShape(i);
                NDArray gradient = Autograd.gradientOf(leaves.get(i));
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
            NDArray flat;
            if (pieces.size() > 1) {
                flat = type.cast(NDArrays.concat(pieces));
            } else {
                // One piece is the gradient itself or a view of it: one copy, the cast's or a
                // duplicate's, not both (an untied embedding's gradient is a gigabyte).
                NDArray piece = pieces.get(0);
                flat = type.cast(piece);
                if (flat == piece) {
                    flat = piece.duplicate();
                }
            }
            flat.attach(scope);
            return flat;
        }
    }
}
