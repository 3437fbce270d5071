package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.Linear;
import java.util.function.Function;

/**
 * Llama with its language-model head: {@code model} ({@link LlamaModel}) and {@code lm_head}, which
 * shares {@code model.embed_tokens.weight} when {@code tie_word_embeddings} is set. The families
 * built on Llama's block subclass it with their own configuration and decoder layer.
 */
public class LlamaForCausalLM extends CausalLM {

    /**
     * Builds the model; call {@code initialize} or load a checkpoint before use.
     *
     * @param config the configuration
     */
    public LlamaForCausalLM(LlamaConfig config) {
        this(config, LlamaDecoderLayer::new);
    }

    /**
     * Builds a model of a family built on Llama's block.
     *
     * @param config the configuration
     * @param layer makes one of the family's decoder layers
     * @param <C> the family's configuration class
     */
    protected <C extends LlamaConfig> LlamaForCausalLM(
            C config, Function<C, ? extends LlamaDecoderLayer> layer) {
        this(config, new LlamaModel(config, () -> layer.apply(config)));
    }

    private LlamaForCausalLM(LlamaConfig config, LlamaModel model) {
        super(config, "model", model);
        Linear head =
                config.tieWordEmbeddings()
                        ? new Linear(((Embedding) model.getTokenEmbedding()).getWeight())
                        : new Linear(
                                config.hiddenSize(),
                                config.vocabSize(),
                                false,
                                config.initializerRange());
        addChild("lm_head", head);
    }

    @Override
    public boolean isComputedBuffer(String name) {
        return name.endsWith(".rotary_emb.inv_freq");
    }
}
