package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.nn.LayerNorm;
import ai.djl.fsdp.zoo.nn.PreNormDecoderLayer;

/**
 * One GPT-2 transformer layer, pre-norm: {@code x + attn(ln_1(x))}, then {@code + mlp(ln_2(.))}. An
 * FSDP unit.
 *
 * <p>Inputs {@code (hidden [B, T, C], bias [B, 1, T, S] or [T, S] [, pastK, pastV])}; outputs
 * {@code (hidden)}, or {@code (hidden, keys, values)} when past keys and values were given.
 */
public final class GPT2Block extends PreNormDecoderLayer {

    GPT2Block(GPT2Config config) {
        super("ln_1", "attn", "ln_2", "mlp");
        addChild("ln_1", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
        addChild("attn", new GPT2Attention(config));
        addChild("ln_2", new LayerNorm(config.hiddenSize(), config.layerNormEpsilon()));
        addChild("mlp", new GPT2MLP(config));
    }
}
