package ai.djl.fsdp.dist;

import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;

/**
 * The argument checks every backend makes before it starts a collective, so that all backends
 * refuse the same mistakes with the same words.
 */
public final class CollectiveArguments {

    private CollectiveArguments() {}

    /**
     * Requires a collective's input and output to hold one element type.
     *
     * @param collective the collective's name, for the error
     * @return the element type (bfloat16 included, see {@link TensorMemory#dataType})
     * @throws IllegalArgumentException if the types differ
     */
    public static DataType sameType(String collective, NDArray input, NDArray output) {
        DataType in = TensorMemory.dataType(input);
        DataType out = TensorMemory.dataType(output);
        if (in != out) {
            throw new IllegalArgumentException(
                    collective
                            + " input is "
                            + in
                            + " but its output is "
                            + out
                            + ": they must match");
        }
        return in;
    }

    /**
     * Requires {@code large} to hold exactly {@code worldSize} times the elements of {@code small},
     * as all-gather and reduce-scatter move equal pieces.
     *
     * @param collective the collective's name, for the error
     * @throws IllegalArgumentException if it does not
     */
    public static void requireSizes(
            String collective,
            int worldSize,
            String largeName,
            NDArray large,
            String smallName,
            NDArray small) {
        if (large.size() != small.size() * worldSize) {
            throw new IllegalArgumentException(
                    collective
                            + " "
                            + largeName
                            + " has "
                            + large.size()
                            + " elements but must have "
                            + worldSize
                            + " (the world size)"
                            + " times the "
                            + smallName
                            + "'s "
                            + small.size()
                            + ": pad to a multiple");
        }
    }

    /**
     * Requires an all-to-all's input and output to hold {@code worldSize} equal pieces each.
     *
     * @throws IllegalArgumentException if they do not
     */
    public static void requirePieces(int worldSize, NDArray input, NDArray output) {
        if (input.size() != output.size() || input.size() % worldSize != 0) {
            throw new IllegalArgumentException(
                    "allToAll input has "
                            + input.size()
                            + " elements and its output "
                            + output.size()
                            + ": both must have the same number, a multiple of the world size "
                            + worldSize
                            + ": pad to a multiple");
        }
    }

    /**
     * Requires a broadcast's root to be a rank of the group.
     *
     * @throws IllegalArgumentException if it is not
     */
    public static void requireRoot(int root, int worldSize) {
        if (root < 0 || root >= worldSize) {
            throw new IllegalArgumentException(
                    "broadcast root " + root + " is not a rank of this" + " group of " + worldSize);
        }
    }
}
