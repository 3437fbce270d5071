package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.Linear;

/**
 * GPT-2 with its language-model head: {@code transformer} ({@link GPT2Model}) and {@code lm_head},
 * whose weight is the token embedding's parameter itself (tied, one Parameter under two names:
 * {@code transformer.wte.weight} and {@code lm_head.weight}).
 */
public final class GPT2LMHeadModel extends CausalLM {

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public GPT2LMHeadModel(GPT2Config config) {
        this(config, new GPT2Model(config));
    }

    private GPT2LMHeadModel(GPT2Config config, GPT2Model transformer) {
        super(config, "transformer", transformer);
        addChild("lm_head", new Linear(((Embedding) transformer.getTokenEmbedding()).getWeight()));
    }

    @Override
    public boolean isComputedBuffer(String name) {
        return name.endsWith(".attn.bias") || name.endsWith(".attn.masked_bias");
    }
}
