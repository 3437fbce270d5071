package ai.djl.fsdp.runtime;

import ai.djl.fsdp.param.FlatLayout;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
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
            List<NDArray> gradients = new ArrayList<>(leaves.size());
            for (NDArray leaf : leaves) {
                NDArray gradient = Autograd.gradientOf(leaf);
                if (gradient != null) {
                    gradient.attach(scratch);
                }
                gradients.add(gradient);
            }
            // One concatenation in the gradients' own type, then one cast: libtorch concatenates
            // arrays of one type by copying memory, and converts elements five times slower
            // inside a concatenation than in a cast (a 16-bit unit's 50,000 elements: 110 us
            // against 18 us).
            Precision pieceType = commonType(gradients, type);
            NDList pieces = new NDList(leaves.size() + 1);
            for (int i = 0; i < gradients.size(); i++) {
                NDArray gradient = gradients.get(i);
                if (gradient == null) {
                    pieces.add(pieceType.zeros(scratch, new Shape(layout.getShape(i).size())));
                } else {
                    NDArray piece = pieceType.cast(gradient);
                    pieces.add(piece.getShape().dimension() == 1 ? piece : piece.reshape(-1));
                }
            }
            if (padded > layout.getNumel()) {
                pieces.add(pieceType.zeros(scratch, new Shape(padded - layout.getNumel())));
            }
            NDArray flat = type.cast(NDArrays.concat(pieces));
            flat.attach(scope);
            return flat;
        }
    }

    /** The type every gradient has, or {@code fallback} when they differ or none arrived. */
    private static Precision commonType(List<NDArray> gradients, Precision fallback) {
        Precision common = null;
        for (NDArray gradient : gradients) {
            if (gradient == null) {
                continue;
            }
            Precision precision = Precision.ofArray(gradient);
            if (common != null && common != precision) {
                return fallback;
            }
            common = precision;
        }
        return common == null ? fallback : common;
    }
}
