package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.tensor.op.FusedActivation;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * GPT-2's feed-forward block: {@code c_proj(gelu_tanh(c_fc(x)))}, the activation being GELU with
 * the tanh approximation GPT-2 was trained with ({@code gelu_new}), libtorch's fused kernel where
 * the platform allows ({@link FusedActivation#geluTanh}).
 */
public final class GPT2MLP extends HfBlock {

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

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray h = FusedActivation.geluTanh(call("c_fc", ps, inputs.singletonOrThrow(), training));
        return new NDList(
                Attention.dropout(call("c_proj", ps, h, training), residualDropout, training));
    }
}
