package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;

/**
 * GPT-2 with its language-model head: {@code transformer} ({@link GPT2Model}) and {@code lm_head},
 * whose weight is the token embedding's parameter itself (tied, one Parameter under two names:
 * {@code transformer.wte.weight} and {@code lm_head.weight}).
 */
public final class GPT2LMHeadModel extends CausalLM {

    private static final String BASE = "transformer";

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public GPT2LMHeadModel(GPT2Config config) {
        super(config);
        GPT2Model transformer = addChild(BASE, new GPT2Model(config));
        addChild("lm_head", new Linear(transformer.getTokenEmbedding().getWeight()));
    }

    @Override
    public String basePrefix() {
        return BASE + '.';
    }

    @Override
    public Class<? extends Block> decoderLayerClass() {
        return GPT2Block.class;
    }

    @Override
    public boolean isComputedBuffer(String name) {
        return name.endsWith(".attn.bias") || name.endsWith(".attn.masked_bias");
    }

    @Override
    protected NDArray hiddenStates(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            KvCache cache,
            boolean training) {
        return ((GPT2Model) child(BASE)).forward(ps, inputIds, attentionMask, cache, training);
    }
}
