package ai.djl.fsdp.zoo.mistral;

import ai.djl.fsdp.zoo.llama.LlamaForCausalLM;

/**
 * Mistral with its language-model head: Llama's model and names ({@code model.layers.N...}, {@code
 * lm_head}), with {@link MistralDecoderLayer}s and the attention limited to {@code sliding_window}
 * positions, in training, evaluation and generation with a cache alike.
 */
public final class MistralForCausalLM extends LlamaForCausalLM {

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public MistralForCausalLM(MistralConfig config) {
        super(config, MistralDecoderLayer::new);
    }
}
