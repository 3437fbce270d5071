package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.LayerNorm;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * One GPT-2 transformer layer, pre-norm: {@code x + attn(ln_1(x))}, then {@code + mlp(ln_2(.))}.
 * An FSDP unit.
 *
 * <p>Inputs {@code (hidden [B, T, C], bias [B, 1, T, S] [, pastK, pastV])}; outputs {@code
 * (hidden)}, or {@code (hidden, keys, values)} when past keys and values were given.
 */
public final class GPT2Block extends HfBlock {

    GPT2Block(GPT2Config config) {
        addChild("ln_1", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
        addChild("attn", new GPT2Attention(config));
        addChild("ln_2", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
        addChild("mlp", new GPT2MLP(config));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDList attnInputs = new NDList(call("ln_1", ps, x, training));
        attnInputs.addAll(inputs.subNDList(1));
        NDList attn = child("attn").forward(ps, attnInputs, training);

        x = x.add(attn.get(0));
        x = x.add(call("mlp", ps, call("ln_2", ps, x, training), training));

        NDList out = new NDList(x);
        out.addAll(attn.subNDList(1));
        return out;
    }
}
