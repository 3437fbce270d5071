package ai.djl.fsdp.zoo.qwen2;

import ai.djl.fsdp.zoo.llama.LlamaDecoderLayer;

/**
 * One Qwen2 decoder layer: Llama's, with biases on {@code q_proj}, {@code k_proj} and {@code
 * v_proj}. An FSDP unit under this name.
 */
public final class Qwen2DecoderLayer extends LlamaDecoderLayer {

    Qwen2DecoderLayer(Qwen2Config config) {
        super(config);
    }
}
