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
        // Statistics in float32 whatever the compute type, as mixed precision wants; the result
        // goes back to the input's type for the next projection.
        NDArray x32 = Precision.FLOAT32.cast(x);
        NDList y =
                x32.getNDArrayInternal()
                        .layerNorm(
                                x32,
                                weight.getShape(),
                                Precision.FLOAT32.cast(value(ps, weight, x, training)),
                                Precision.FLOAT32.cast(value(ps, bias, x, training)),
                                eps);
        return new NDList(Precision.castLike(y.singletonOrThrow(), x));
    }
}
