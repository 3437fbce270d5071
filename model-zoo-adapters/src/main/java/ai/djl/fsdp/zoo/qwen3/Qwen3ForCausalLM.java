package ai.djl.fsdp.zoo.qwen3;

import ai.djl.fsdp.zoo.llama.LlamaForCausalLM;

/**
 * Qwen3 with its language-model head: Llama's model and names with {@link Qwen3DecoderLayer}s; the
 * small models tie {@code lm_head} to {@code model.embed_tokens}.
 */
public final class Qwen3ForCausalLM extends LlamaForCausalLM {

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public Qwen3ForCausalLM(Qwen3Config config) {
        super(config, Qwen3DecoderLayer::new);
    }
}
