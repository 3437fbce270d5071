package ai.djl.fsdp.zoo.mistral;

import ai.djl.fsdp.zoo.llama.LlamaDecoderLayer;

/**
 * One Mistral decoder layer: Llama's, attending within the sliding window the model's bias carries.
 * An FSDP unit under this name.
 */
public final class MistralDecoderLayer extends LlamaDecoderLayer {

    MistralDecoderLayer(MistralConfig config) {
        super(config);
    }
}
