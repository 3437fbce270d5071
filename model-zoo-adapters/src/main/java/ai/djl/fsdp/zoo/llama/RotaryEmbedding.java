package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * Rotary position embeddings in Hugging Face's layout (the two halves of each head rotate together,
 * not interleaved pairs): {@code x cos + rotate_half(x) sin} with frequencies {@code theta^(-2i /
 * d)}, rescaled as {@code rope_scaling} says ({@link RopeScaling}). Has no parameters, so it is a
 * function rather than a block.
 */
final class RotaryEmbedding {

    private final int headDim;
    private final double theta;
    private final long maxPositions;
    private final RopeScaling scaling;
    private final float[] inverseFrequencies;

    RotaryEmbedding(LlamaConfig config) {
        headDim = config.headDim();
        theta = config.ropeTheta();
        maxPositions = config.maxPositions();
        scaling = config.ropeScaling();
        inverseFrequencies = scaling.inverseFrequencies(headDim, theta, maxPositions, 0);
    }

    /**
     * Returns {@code cos} and {@code sin}, each {@code [B, 1, T, D]}, for position ids {@code [B,
     * T]}.
     */
    NDList cosSin(NDManager manager, NDArray positionIds) {
        float[] inverse = inverseFrequencies;
        if (scaling.isDynamic()) {
            long sequence = positionIds.max().getLong() + 1;
            inverse = scaling.inverseFrequencies(headDim, theta, maxPositions, sequence);
        }
        NDArray frequencies = OwnedArrays.create(manager, inverse, new Shape(inverse.length));
        NDArray angles =
                positionIds.toType(DataType.FLOAT32, false).expandDims(-1).mul(frequencies);
        NDArray both = angles.concat(angles, -1).expandDims(1);
        return new NDList(both.cos(), both.sin());
    }

    /** Rotates queries or keys {@code [B, H, T, D]}. */
    static NDArray apply(NDArray x, NDArray cos, NDArray sin) {
        NDList halves = x.split(2, 3);
        NDArray rotated = halves.get(1).neg().concat(halves.get(0), 3);
        // cos and sin are float32; the rotation keeps the projections' type.
        return x.mul(Precision.castLike(cos, x)).add(rotated.mul(Precision.castLike(sin, x)));
    }
}
