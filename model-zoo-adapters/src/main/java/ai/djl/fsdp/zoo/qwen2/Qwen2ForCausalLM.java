package ai.djl.fsdp.zoo.qwen2;

import ai.djl.fsdp.zoo.llama.LlamaForCausalLM;

/**
 * Qwen2 (and Qwen2.5) with its language-model head: Llama's model and names with {@link
 * Qwen2DecoderLayer}s; the small models tie {@code lm_head} to {@code model.embed_tokens}.
 */
public final class Qwen2ForCausalLM extends LlamaForCausalLM {

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public Qwen2ForCausalLM(Qwen2Config config) {
        super(config, Qwen2DecoderLayer::new);
    }
}
