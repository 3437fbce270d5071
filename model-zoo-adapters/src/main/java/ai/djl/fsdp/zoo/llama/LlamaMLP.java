package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.nn.Activation;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/** Llama's SwiGLU feed-forward block: {@code down_proj(silu(gate_proj(x)) * up_proj(x))}. */
public final class LlamaMLP extends HfBlock {

    LlamaMLP(LlamaConfig config) {
        int width = config.hiddenSize();
        int inner = config.intermediateSize();
        boolean bias = config.mlpBias();
        float std = config.initializerRange();
        addChild("gate_proj", new Linear(width, inner, bias, std));
        addChild("up_proj", new Linear(width, inner, bias, std));
        addChild("down_proj", new Linear(inner, width, bias, std));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray gate = call("gate_proj", ps, x, training);
        NDArray h = gate.mul(Activation.sigmoid(gate)).mul(call("up_proj", ps, x, training));
        return new NDList(call("down_proj", ps, h, training));
    }
}
