package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;

/**
 * Llama with its language-model head: {@code model} ({@link LlamaModel}) and {@code lm_head}, which
 * shares {@code model.embed_tokens.weight} when {@code tie_word_embeddings} is set.
 */
public final class LlamaForCausalLM extends CausalLM {

    private static final String BASE = "model";

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public LlamaForCausalLM(LlamaConfig config) {
        super(config);
        LlamaModel model = addChild(BASE, new LlamaModel(config));
        Linear head =
                config.tieWordEmbeddings()
                        ? new Linear(model.getTokenEmbedding().getWeight())
                        : new Linear(
                                config.hiddenSize(),
                                config.vocabSize(),
                                false,
                                config.initializerRange());
        addChild("lm_head", head);
    }

    @Override
    public String basePrefix() {
        return BASE + '.';
    }

    @Override
    public Class<? extends Block> decoderLayerClass() {
        return LlamaDecoderLayer.class;
    }

    @Override
    public boolean isComputedBuffer(String name) {
        return name.endsWith(".rotary_emb.inv_freq");
    }

    @Override
    protected NDArray hiddenStates(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            KvCache cache,
            boolean training) {
        return ((LlamaModel) child(BASE)).forward(ps, inputIds, attentionMask, cache, training);
    }
}
