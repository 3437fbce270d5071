package ai.djl.fsdp.internal.runtime;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;

/**
 * The mean and variance per channel of a batch split over ranks, and the arithmetic of a
 * synchronized BatchNorm over them, as PyTorch's {@code SyncBatchNorm} computes it (all in
 * float32).
 *
 * <ul>
 *   <li>Forward: each rank packs its slice's count, mean and sum of squared deviations per channel
 *       ({@link #localMoments}); the ranks' packs are gathered and combined with Chan's parallel
 *       formula ({@link #combine}), which avoids the cancellation of a sum of squares.
 *   <li>Backward: with {@code xhat = (x - mean) * invstd} over the global batch of {@code M}
 *       elements per channel, {@code dx = invstd * (dxhat - sum(dxhat) / M - xhat * sum(dxhat *
 *       xhat) / M)}, where the sums run over every rank's elements: each rank packs its own two
 *       sums ({@link #gradientSums}), the ranks sum the packs, and each computes its slice's {@code
 *       dx} ({@link #inputGradient}).
 * </ul>
 *
 * @param mean the global mean per channel, shaped to broadcast over the input
 * @param variance the global (biased) variance per channel, shaped the same
 * @param count the elements per channel over every rank
 */
record BatchStatistics(NDArray mean, NDArray variance, long count) {

    /**
     * Returns this rank's slice's moments as one 1-D array: the count of elements per channel, then
     * the mean of each channel, then each channel's sum of squared deviations from its mean.
     *
     * @param x the slice in float32
     * @param axis the channel axis, counted from 0
     */
    static NDArray localMoments(NDArray x, int axis) {
        int[] axes = reducedAxes(x.getShape().dimension(), axis);
        long channels = x.getShape().get(axis);
        long count = x.size() / channels;
        NDArray mean = x.sum(axes, true).div(count);
        NDArray deviations = x.sub(mean);
        NDArray squares = deviations.mul(deviations).sum(axes);
        NDArray counted = x.getManager().full(new Shape(1), (float) count);
        return NDArrays.concat(new NDList(counted, mean.reshape(channels), squares));
    }

    /**
     * Combines every rank's {@link #localMoments} into the global batch's statistics.
     *
     * @param gathered the ranks' moments, one after the other (ranks x (2 * channels + 1))
     * @param like an input of the layer, for the shape the statistics broadcast to
     * @param axis the channel axis, counted from 0
     */
    static BatchStatistics combine(NDArray gathered, NDArray like, int axis) {
        long channels = like.getShape().get(axis);
        NDArray table = gathered.reshape(-1, 2 * channels + 1);
        NDArray counts = table.get(new NDIndex(":, 0:1"));
        NDArray means = table.get(new NDIndex(":, 1:{}", channels + 1));
        NDArray squares = table.get(new NDIndex(":, {}:", channels + 1));
        float total = counts.sum().getFloat();
        NDArray mean = means.mul(counts).sum(new int[] {0}).div(total);
        NDArray spread = means.sub(mean);
        NDArray m2 = squares.add(spread.mul(spread).mul(counts)).sum(new int[] {0});
        Shape shape = channelShape(like.getShape(), axis);
        return new BatchStatistics(mean.reshape(shape), m2.div(total).reshape(shape), (long) total);
    }

    /** Returns {@code 1 / sqrt(variance + epsilon)}. */
    NDArray inverseStd(float epsilon) {
        return variance.add(epsilon).sqrt().pow(-1);
    }

    /** Returns the unbiased variance the running variance follows, as PyTorch's BatchNorm. */
    NDArray unbiasedVariance() {
        if (count < 2) {
            throw new IllegalArgumentException(
                    "BatchNorm in training needs more than 1 value per channel over the global"
                            + " batch, got "
                            + count);
        }
        return variance.mul((double) count / (count - 1));
    }

    /**
     * Returns this rank's two gradient sums per channel as one 1-D array: {@code sum(dxhat)}, then
     * {@code sum(dxhat * xhat)}.
     *
     * @param dxhat the gradient of the normalized slice, float32
     * @param xhat the normalized slice, float32
     * @param axis the channel axis, counted from 0
     */
    static NDArray gradientSums(NDArray dxhat, NDArray xhat, int axis) {
        int[] axes = reducedAxes(xhat.getShape().dimension(), axis);
        return NDArrays.concat(new NDList(dxhat.sum(axes), dxhat.mul(xhat).sum(axes)));
    }

    /**
     * Returns the gradient of this rank's slice of the input.
     *
     * @param dxhat the gradient of the normalized slice, float32
     * @param xhat the normalized slice, float32
     * @param inverseStd the {@link #inverseStd} it was normalized with
     * @param sums the ranks' {@link #gradientSums}, summed
     * @param count the elements per channel over every rank
     * @param axis the channel axis, counted from 0
     */
    static NDArray inputGradient(
            NDArray dxhat, NDArray xhat, NDArray inverseStd, NDArray sums, long count, int axis) {
        long channels = xhat.getShape().get(axis);
        Shape shape = channelShape(xhat.getShape(), axis);
        NDArray meanGradient = sums.get(new NDIndex("0:{}", channels)).div(count).reshape(shape);
        NDArray meanProduct = sums.get(new NDIndex("{}:", channels)).div(count).reshape(shape);
        return dxhat.sub(meanGradient).sub(xhat.mul(meanProduct)).mul(inverseStd);
    }

    /** Returns the shape of per-channel values broadcast over an input of {@code shape}. */
    static Shape channelShape(Shape shape, int axis) {
        long[] dims = new long[shape.dimension()];
        java.util.Arrays.fill(dims, 1);
        dims[axis] = shape.get(axis);
        return new Shape(dims);
    }

    private static int[] reducedAxes(int dimensions, int axis) {
        int[] axes = new int[dimensions - 1];
        for (int i = 0, j = 0; i < dimensions; i++) {
            if (i != axis) {
                axes[j++] = i;
            }
        }
        return axes;
    }
}
