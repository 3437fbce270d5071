package ai.djl.fsdp.zoo;

import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.List;

/**
 * A decoder-only language model as a Block tree with Hugging Face's module and parameter names.
 *
 * <p>Block forward contract: {@code NDList(inputIds [B, T] int64 [, attentionMask [B, T]])} to
 * {@code NDList(logits [B, T, vocab])}. The mask holds 0 for padding and, for tokens, 1 or (for
 * documents packed into one row) each token's document id 1, 2, 3, ...: a token attends only to
 * earlier tokens of its own document, and position ids count those, so left- and right-padded
 * batches both work and each packed document is computed as if it were alone. The decoder layers
 * are child blocks called through {@link ai.djl.nn.Block#forward}, one call per layer per pass, and
 * are pure functions of their inputs and parameters: they are FSDP units ({@link
 * #defaultWrapPolicy} adds an untied embedding and head). A key-value cache travels in the call's
 * parameters ({@link KvCache#asParams()}): the mask then covers the cached positions and the new
 * ones, {@code [B, cached + T]}.
 *
 * <p>With {@link #setFusedLossHead} on, a training pass without a cache returns {@code
 * NDList(hiddenStates [B, T, C], headWeight [vocab, C])} instead: the final hidden states and the
 * {@code lm_head} weight (the token embedding's when tied), for {@link
 * ai.djl.fsdp.zoo.sharded.CausalLmLoss} to compute the head's product chunk by chunk with the loss,
 * so that the logits {@code [B, T, vocab]} and their gradient never exist whole. A head that is an
 * FSDP unit of its own is not read here and returns logits. Inference and passes with a cache
 * (evaluation, generation) return logits either way.
 */
public abstract class CausalLM extends PretrainedModel {

    private static final String HEAD = "lm_head";

    private final String base;
    private boolean fusedLossHead;

    /**
     * Creates the model with its base model; the subclass adds {@code lm_head}.
     *
     * @param config its configuration
     * @param base the base model's name ({@code transformer} for GPT-2, {@code model} for Llama)
     * @param model the base model
     */
    protected CausalLM(ModelConfig config, String base, DecoderModel model) {
        super(config);
        this.base = base;
        addChild(base, model);
    }

    /**
     * Returns the path of the base model inside this one, with a trailing dot ({@code transformer.}
     * for GPT-2, {@code model.} for Llama). Checkpoints of the bare base model name their tensors
     * without it.
     *
     * @return the base model prefix
     */
    @Override
    public String basePrefix() {
        return base + '.';
    }

    /**
     * Returns how FSDP cuts this model into units unless told otherwise, for inference and
     * generation: each decoder layer a unit and, when {@code lm_head} does not share the token
     * embedding's weight, the token embedding and the head each a unit of its own, so that the root
     * unit (gathered for the whole pass) keeps only the final norm and no unit holds two
     * vocabulary-wide weights (at a vocabulary of 128,256 and width 4096 each is a gigabyte in
     * bfloat16). A tied embedding and head stay in the root, which gathers their one weight once
     * per pass. The blocks are looked up when the plan is made, so an adapter put on the head
     * before then is wrapped with it.
     *
     * @return the wrap policy
     */
    @Override
    public WrapPolicy defaultWrapPolicy() {
        return defaultWrapPolicy(0);
    }

    /**
     * Returns the default units for training on {@code tokens} tokens per micro-batch: as {@link
     * #defaultWrapPolicy()}, except that an untied head is a unit only where its weight outweighs
     * the logits it would make. A head that is a unit computes the logits {@code [tokens, vocab]}
     * itself, and training then holds three arrays of that size (the logits, their gradient and
     * backward's recomputed logits); a head in the root holds its weight {@code [vocab, width]}
     * gathered through the step, and the loss takes its product a chunk of rows at a time ({@link
     * #setFusedLossHead}). So the head is a unit when {@code 3 * tokens < width}: at width 4096,
     * below 1366 tokens.
     *
     * @param tokens the tokens of one micro-batch on one rank (batch size times sequence length)
     * @return the wrap policy
     */
    @Override
    public WrapPolicy defaultWrapPolicy(long tokens) {
        WrapPolicy layers = WrapPolicy.byLayerClass(decoderLayerClass().getSimpleName());
        boolean headAlone = 3 * tokens < getConfig().hiddenSize();
        return block -> {
            if (layers.shouldWrap(block)) {
                return true;
            }
            Block embedding = ((DecoderModel) child(base)).getTokenEmbedding();
            Block head = child(HEAD);
            return (block == embedding || (block == head && headAlone))
                    && !sharesParameter(head, embedding);
        };
    }

    /**
     * Returns the parameters that hold a row per token: the token embedding's weight and, when
     * {@code lm_head} does not share it, the head's weight. A checkpoint's vocabulary grows by
     * adding rows to these.
     *
     * @return the token embedding's weight, then an untied head's
     */
    @Override
    public List<Parameter> vocabularyParameters() {
        Block embedding = ((DecoderModel) child(base)).getTokenEmbedding();
        Block head = child(HEAD);
        Parameter table = embedding.getParameters().get("weight");
        return sharesParameter(head, embedding)
                ? List.of(table)
                : List.of(table, head.getParameters().get("weight"));
    }

    /**
     * Sets whether training passes hand the loss the final hidden states and the head's weight
     * instead of logits (see the class description). A head that is not a bias-free {@link Linear}
     * (a LoRA-adapted head, or a head made an FSDP unit of its own) computes logits as before. Only
     * {@code CausalLmLoss} reads that pair: a model with this on must be trained with it, and a DJL
     * evaluator or other loss given the pair would take the hidden states for logits.
     *
     * @param fused true to leave the head's product to the loss in training
     */
    public void setFusedLossHead(boolean fused) {
        this.fusedLossHead = fused;
    }

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
    public NDArray forward(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            KvCache cache,
            boolean training) {
        NDArray hidden = hiddenStates(ps, inputIds, attentionMask, cache, training);
        return call(HEAD, ps, hidden, training);
    }

    /**
     * Runs the base model: the final hidden states, which {@code lm_head} maps to logits.
     *
     * @param ps the parameter store
     * @param inputIds the new tokens {@code [B, T]}, int64
     * @param attentionMask {@code [B, cached + T]}, or null when nothing is padded
     * @param cache the cache to read and extend, or null to run without one
     * @param training whether this is a training pass (dropout)
     * @return the hidden states {@code [B, T, C]}
     */
    private NDArray hiddenStates(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            KvCache cache,
            boolean training) {
        return ((DecoderModel) child(base)).forward(ps, inputIds, attentionMask, cache, training);
    }

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
        KvCache cache = KvCache.of(params);
        if (fusedLossHead
                && training
                && cache == null
                && child(HEAD) instanceof Linear head
                && !head.hasBias()) {
            NDArray hidden = hiddenStates(ps, inputs.get(0), mask, null, true);
            // A reference of the batch's own: callers attach or close the outputs they are given,
            // and the weight belongs to the model (or to the FSDP root's gathered buffer).
            NDArray weight = head.weightValue(ps, hidden, true);
            return new NDList(hidden, TensorMemory.newReference(weight, hidden.getManager()));
        }
        return new NDList(forward(ps, inputs.get(0), mask, cache, training));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[0].add(getConfig().vocabSize())};
    }
}
