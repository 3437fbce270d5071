package ai.djl.fsdp.zoo.qwen3;

import ai.djl.fsdp.zoo.llama.LlamaDecoderLayer;

/**
 * One Qwen3 decoder layer: Llama's, with {@code self_attn.q_norm} and {@code self_attn.k_norm}
 * normalizing each head's queries and keys before the rotation. An FSDP unit under this name.
 */
public final class Qwen3DecoderLayer extends LlamaDecoderLayer {

    Qwen3DecoderLayer(Qwen3Config config) {
        super(config);
    }
}
