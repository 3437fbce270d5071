package ai.djl.fsdp.zoo.nn;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.PairList;

/**
 * PyTorch's {@code nn.LayerNorm} over the last axis, with parameters named {@code weight} and
 * {@code bias} (DJL's own LayerNorm names them gamma and beta, and normalizes every axis but the
 * first by default).
 */
public final class LayerNorm extends HfBlock {

    private final Parameter weight;
    private final Parameter bias;
    private final float eps;

    /**
     * Creates a layer norm.
     *
     * @param dim the size of the last axis
     * @param eps the variance epsilon
     */
    public LayerNorm(long dim, float eps) {
        weight = addParameter("weight", new Shape(dim), Initializer.ONES);
        bias = addParameter("bias", new Shape(dim), Initializer.ZEROS);
        this.eps = eps;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        // One operator in the input's type: libtorch computes a 16-bit input's statistics and
        // affine transform in float32 and rounds once at the end, as casting to float32 and back
        // would, without the four casts and their backward nodes.
        NDArray w = Precision.castLike(value(ps, weight, x, training), x);
        NDArray b = Precision.castLike(value(ps, bias, x, training), x);
        return x.getNDArrayInternal().layerNorm(x, weight.getShape(), w, b, eps);
    }
}
