package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * The sum of the squares of a vector's elements as one libtorch call ({@code aten::dot} of the
 * vector with itself), made in a manager the caller names: what a gradient norm needs per flat
 * gradient, where {@code square().sum()} writes a temporary as large as the vector and DJL would
 * make the result in the vector's own manager (a shard's state).
 */
public final class SumOfSquares {

    private SumOfSquares() {}

    /**
     * Returns {@code sum(vector ** 2)}, 0-dimensional, in the vector's type.
     *
     * @param vector a 1-D floating-point PyTorch-engine array
     * @param manager the manager of the result, on the vector's device
     * @return the sum
     * @throws IllegalArgumentException if {@code vector} is not 1-D
     */
    public static NDArray of(NDArray vector, NDManager manager) {
        if (vector.getShape().dimension() != 1) {
            throw new IllegalArgumentException(
                    "a sum of squares takes a 1-D array, got " + vector.getShape());
        }
        // dot(Tensor self, Tensor tensor) -> Tensor
        return DispatcherCall.of("aten::dot", 2)
                .tensor(vector)
                .tensor(vector)
                .call((PtNDManager) manager, 1)[0];
    }
}
