package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;

/** RMS normalization over the last axis: {@code x / sqrt(mean(x^2) + eps) * weight}. */
public final class LlamaRMSNorm extends HfBlock {

    private final Parameter weight;
    private final float eps;

    /**
     * Creates the norm; T5 uses it as its {@code T5LayerNorm}, the same function.
     *
     * @param dim the size of the last axis
     * @param eps the epsilon under the square root
     */
    public LlamaRMSNorm(long dim, float eps) {
        weight = addParameter("weight", new Shape(dim), Initializer.ONES);
        this.eps = eps;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        // As Hugging Face's: normalized in float32, back to the input's type, then the weight.
        NDArray x32 = Precision.FLOAT32.cast(x);
        NDArray meanSquare = x32.square().mean(new int[] {-1}, true);
        NDArray normalized = Precision.castLike(x32.div(ScalarOps.add(meanSquare, eps).sqrt()), x);
        return new NDList(normalized.mul(value(ps, weight, x, training)));
    }
}
