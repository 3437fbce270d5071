package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.nn.PreNormDecoderLayer;

/**
 * One Llama decoder layer, pre-norm with RMSNorm: {@code x + self_attn(input_layernorm(x))}, then
 * {@code + mlp(post_attention_layernorm(.))}. An FSDP unit. The families built on this block
 * subclass it under their own name ({@code MistralDecoderLayer}, ...), the name FSDP wraps by.
 *
 * <p>Inputs {@code (hidden [B, T, C], bias [B, 1, T, S] or [T, S], cos, sin [B, 1, T, D] [, pastK,
 * pastV])}; outputs {@code (hidden)}, or {@code (hidden, keys, values)} when past keys and values
 * were given.
 */
public class LlamaDecoderLayer extends PreNormDecoderLayer {

    /**
     * Builds the layer.
     *
     * @param config the configuration
     */
    protected LlamaDecoderLayer(LlamaConfig config) {
        super("input_layernorm", "self_attn", "post_attention_layernorm", "mlp");
        addChild("self_attn", new LlamaAttention(config));
        addChild("mlp", new LlamaMLP(config));
        addChild("input_layernorm", new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
        addChild(
                "post_attention_layernorm",
                new LlamaRMSNorm(config.hiddenSize(), config.rmsNormEps()));
    }
}
