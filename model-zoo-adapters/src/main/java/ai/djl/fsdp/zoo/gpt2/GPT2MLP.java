package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** GPT-2's feed-forward block: {@code c_proj(gelu_tanh(c_fc(x)))}. */
public final class GPT2MLP extends HfBlock {

    private static final float SQRT_2_OVER_PI = (float) Math.sqrt(2 / Math.PI);

    private final float residualDropout;

    GPT2MLP(GPT2Config config) {
        float std = config.initializerRange();
        addChild("c_fc", new Conv1D(config.hiddenSize(), config.innerSize(), std));
        addChild(
                "c_proj",
                new Conv1D(
                        config.innerSize(), config.hiddenSize(), config.residualProjectionStd()));
        residualDropout = config.residualDropout();
    }

    /**
     * GELU with the tanh approximation GPT-2 was trained with ({@code gelu_new}): {@code 0.5 x (1 +
     * tanh(sqrt(2 / pi) (x + 0.044715 x^3)))}.
     *
     * @param x the input
     * @return the activation
     */
    static NDArray geluTanh(NDArray x) {
        NDArray cubic = x.pow(OwnedArrays.scalar(x, 3)).mul(OwnedArrays.scalar(x, 0.044715f));
        NDArray inner = x.add(cubic).mul(OwnedArrays.scalar(x, SQRT_2_OVER_PI));
        return x.mul(OwnedArrays.scalar(x, 0.5f)).mul(inner.tanh().add(1));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray h = geluTanh(call("c_fc", ps, inputs.singletonOrThrow(), training));
        return new NDList(
                Attention.dropout(call("c_proj", ps, h, training), residualDropout, training));
    }
}
