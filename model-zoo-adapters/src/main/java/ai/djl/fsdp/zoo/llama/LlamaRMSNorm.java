package ai.djl.fsdp.zoo.llama;

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

    LlamaRMSNorm(long dim, float eps) {
        weight = addParameter("weight", new Shape(dim), Initializer.ONES);
        this.eps = eps;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray meanSquare = x.square().mean(new int[] {-1}, true);
        return new NDList(x.div(meanSquare.add(eps).sqrt()).mul(value(ps, weight, x, training)));
    }
}
