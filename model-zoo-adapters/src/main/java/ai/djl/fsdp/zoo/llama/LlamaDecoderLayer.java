package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * One Llama decoder layer, pre-norm with RMSNorm: {@code x + self_attn(input_layernorm(x))}, then
 * {@code + mlp(post_attention_layernorm(.))}. An FSDP unit.
 *
 * <p>Inputs {@code (hidden [B, T, C], bias [B, 1, T, S], cos, sin [B, 1, T, D] [, pastK,
 * pastV])}; outputs {@code (hidden)}, or {@code (hidden, keys, values)} when past keys and values
 * were given.
 */
public final class LlamaDecoderLayer extends HfBlock {

    LlamaDecoderLayer(LlamaConfig config) {
        addChild("self_attn", new LlamaAttention(config));
        addChild("mlp", new LlamaMLP(config));
        addChild("input_layernorm", new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
        addChild("post_attention_layernorm", new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDList attnInputs = new NDList(call("input_layernorm", ps, x, training));
        attnInputs.addAll(inputs.subNDList(1));
        NDList attn = child("self_attn").forward(ps, attnInputs, training);

        x = x.add(attn.get(0));
        x = x.add(call("mlp", ps, call("post_attention_layernorm", ps, x, training), training));

        NDList out = new NDList(x);
        out.addAll(attn.subNDList(1));
        return out;
    }
}
