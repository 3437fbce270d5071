package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * The sum of the squares of a vector's elements as one libtorch call ({@code aten::dot} of the
 * vector with itself) per slice of at most {@link #SLICE} elements, made in a manager the caller
 * names: what a gradient norm needs per flat gradient, where {@code square().sum()} writes a
 * temporary as large as the vector and DJL would make the result in the vector's own manager (a
 * shard's state). cuBLAS takes at most {@code 2^31 - 1} elements in one dot product, and a flat
 * gradient that is not split can hold more.
 */
public final class SumOfSquares {

    /** The most elements one dot product sums. */
    static final long SLICE = 1L << 30;

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
        return of(vector, manager, SLICE);
    }

    /** {@link #of(NDArray, NDManager)} with slices of at most {@code slice} elements. */
    static NDArray of(NDArray vector, NDManager manager, long slice) {
        if (vector.getShape().dimension() != 1) {
            throw new IllegalArgumentException(
                    "a sum of squares takes a 1-D array, got " + vector.getShape());
        }
        long size = vector.size();
        if (size <= slice) {
            return dot(vector, manager);
        }
        try (NDManager slices = manager.newSubManager()) {
            NDList sums = new NDList();
            for (long start = 0; start < size; start += slice) {
                NDArray part =
                        vector.get(new NDIndex().addSliceDim(start, Math.min(size, start + slice)));
                part.attach(slices);
                sums.add(dot(part, slices));
            }
            NDArray sum = NDArrays.stack(sums).sum();
            sum.attach(manager);
            return sum;
        }
    }

    private static NDArray dot(NDArray vector, NDManager manager) {
        // dot(Tensor self, Tensor tensor) -> Tensor
        return DispatcherCall.of("aten::dot", 2)
                .tensor(vector)
                .tensor(vector)
                .call((PtNDManager) manager, 1)[0];
    }
}
