package ai.djl.fsdp.zoo;

import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * A decoder-only language model as a Block tree with Hugging Face's module and parameter names.
 *
 * <p>Block forward contract: {@code NDList(inputIds [B, T] int64 [, attentionMask [B, T]])} to
 * {@code NDList(logits [B, T, vocab])}. The mask holds 0 for padding and, for tokens, 1 or (for
 * documents packed into one row) each token's document id 1, 2, 3, ...: a token attends only to
 * earlier tokens of its own document, and position ids count those, so left- and right-padded
 * batches both work and each packed document is computed as if it were alone. The decoder layers
 * are child blocks called through {@link ai.djl.nn.Block#forward}, one call per layer per pass, and
 * are pure functions of their inputs and parameters: they are the FSDP units. A key-value cache
 * travels in the call's parameters ({@link KvCache#asParams()}): the mask then covers the cached
 * positions and the new ones, {@code [B, cached + T]}.
 */
public abstract class CausalLM extends HfBlock {

    private final ModelConfig config;

    /**
     * Creates the model.
     *
     * @param config its configuration
     */
    protected CausalLM(ModelConfig config) {
        this.config = config;
    }

    /**
     * Returns the configuration.
     *
     * @return the configuration
     */
    public ModelConfig getConfig() {
        return config;
    }

    /**
     * Returns the path of the base model inside this one, with a trailing dot ({@code transformer.}
     * for GPT-2, {@code model.} for Llama). Checkpoints of the bare base model name their tensors
     * without it.
     *
     * @return the base model prefix
     */
    public abstract String basePrefix();

    /**
     * Returns the class of the repeated decoder layer ({@code GPT2Block}, {@code
     * LlamaDecoderLayer}): the natural FSDP unit, as Hugging Face's {@code _no_split_modules}.
     *
     * @return the decoder layer class
     */
    public abstract Class<? extends Block> decoderLayerClass();

    /**
     * Returns whether a checkpoint tensor is a buffer Hugging Face stores but this model computes
     * (GPT-2's causal mask {@code attn.bias}, Llama's {@code rotary_emb.inv_freq}).
     *
     * @param name the tensor name
     * @return true if loading should skip it
     */
    public abstract boolean isComputedBuffer(String name);

    /**
     * Runs the model on new tokens, optionally continuing from and extending a key-value cache.
     *
     * @param ps the parameter store
     * @param inputIds the new tokens {@code [B, T]}, int64
     * @param attentionMask {@code [B, cached + T]}, or null when nothing is padded
     * @param cache the cache to read and extend, or null to run without one
     * @param training whether this is a training pass (dropout)
     * @return the logits {@code [B, T, vocab]}
     */
    public abstract NDArray forward(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            KvCache cache,
            boolean training);

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        if (inputs.isEmpty() || inputs.size() > 2) {
            throw new IllegalArgumentException(
                    "expected NDList(inputIds [B, T] [, attentionMask [B, T]]), got "
                            + inputs.size()
                            + " arrays");
        }
        NDArray mask = inputs.size() == 2 ? inputs.get(1) : null;
        return new NDList(forward(ps, inputs.get(0), mask, KvCache.of(params), training));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(config.vocabSize())};
    }
}
