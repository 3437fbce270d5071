package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.EncoderDecoderCache;
import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.List;

/**
 * T5 with its language-model head, Hugging Face's {@code T5ForConditionalGeneration}: the token
 * table {@code shared}, the {@code encoder} and {@code decoder} stacks (each holding the {@code
 * shared} block itself as its {@code embed_tokens}), and {@code lm_head}, which shares {@code
 * shared.weight} when {@code tie_word_embeddings} is set: the decoder's output is then scaled by
 * {@code d_model^-0.5} before it. Parameter names are Hugging Face's ({@code
 * encoder.block.0.layer.0.SelfAttention.q.weight}, ...), the shared table under {@code
 * shared.weight} with the stacks' {@code embed_tokens.weight} (and a tied {@code lm_head.weight})
 * as its aliases.
 *
 * <p>Block forward contract: {@code NDList(inputIds [B, S] int64 [, attentionMask [B, S]],
 * decoderInputIds [B, T] int64)} to {@code NDList(logits [B, T, vocab])}. The attention mask holds
 * 1 for the encoder's tokens and 0 for its padding; the decoder's inputs are the labels shifted
 * right ({@link EncoderDecoderConfig#shiftRight}). The {@link T5Block}s of both stacks and, untied,
 * the shared table and the head are the FSDP units ({@link #defaultWrapPolicy}); the final norms
 * stay in the root. With an {@link EncoderDecoderCache} in the call's parameters ({@link
 * EncoderDecoderCache#asParams()}) a call is one generation step: the encoder runs at the first
 * (its output kept in the cache), and {@code decoderInputIds} are the step's new tokens.
 */
public final class T5ForConditionalGeneration extends PretrainedModel {

    private final T5Config config;

    T5ForConditionalGeneration(T5Config config) {
        super(config);
        this.config = config;
        float std = config.initializerFactor();
        Embedding shared =
                addChild("shared", new Embedding(config.vocabSize(), config.hiddenSize(), std));
        addChild("encoder", new T5Stack(config, false, shared));
        addChild("decoder", new T5Stack(config, true, shared));
        addChild(
                "lm_head",
                config.tieWordEmbeddings()
                        ? new Linear(shared.getWeight())
                        : new Linear(config.hiddenSize(), config.vocabSize(), false, std));
    }

    @Override
    public T5Config getConfig() {
        return config;
    }

    /**
     * Runs the encoder.
     *
     * @param ps the parameter store
     * @param inputIds the tokens {@code [B, S]}, int64
     * @param attentionMask {@code [B, S]}, 1 for tokens and 0 for padding; or null for none
     * @param training whether this is a training pass (dropout)
     * @return the encoder's output {@code [B, S, C]}
     */
    public NDArray encode(
            ParameterStore ps, NDArray inputIds, NDArray attentionMask, boolean training) {
        NDArray bias = paddingBias(inputIds, attentionMask);
        return ((T5Stack) child("encoder"))
                .forward(ps, inputIds, bias, new NDList(), null, training);
    }

    /**
     * Runs the decoder and the head on new decoder tokens, optionally continuing from and extending
     * a cache.
     *
     * @param ps the parameter store
     * @param decoderIds the new decoder tokens {@code [B, T]}, int64
     * @param encoderStates the encoder's output {@code [B, S, C]}
     * @param attentionMask the encoder's mask {@code [B, S]}, or null
     * @param cache the cache to read and extend, or null to run without one
     * @param training whether this is a training pass (dropout)
     * @return the logits {@code [B, T, vocab]}
     */
    public NDArray decode(
            ParameterStore ps,
            NDArray decoderIds,
            NDArray encoderStates,
            NDArray attentionMask,
            EncoderDecoderCache cache,
            boolean training) {
        long batch = decoderIds.getShape().get(0);
        long length = decoderIds.getShape().get(1);
        long past = cache == null ? 0 : cache.length();
        NDArray causal = Attention.causalBias(decoderIds.getManager(), null, batch, past, length);
        // In the manager of the new tokens, as the pass's other arrays are: a generation step's.
        NDArray crossBias = paddingBias(encoderStates, attentionMask);
        crossBias.attach(decoderIds.getManager());
        NDList encoder = new NDList(encoderStates, crossBias);
        NDArray hidden =
                ((T5Stack) child("decoder"))
                        .forward(ps, decoderIds, causal, encoder, cache, training);
        if (config.tieWordEmbeddings()) {
            hidden = hidden.mul((float) Math.pow(config.hiddenSize(), -0.5));
        }
        return call("lm_head", ps, hidden, training);
    }

    /**
     * Runs the whole model: the encoder, then the decoder and the head.
     *
     * @param ps the parameter store
     * @param inputIds the tokens {@code [B, S]}, int64
     * @param attentionMask {@code [B, S]}, or null
     * @param decoderIds the decoder's inputs {@code [B, T]}, int64: the labels shifted right
     * @param training whether this is a training pass (dropout)
     * @return the logits {@code [B, T, vocab]}
     */
    public NDArray forward(
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            NDArray decoderIds,
            boolean training) {
        NDArray encoded = encode(ps, inputIds, attentionMask, training);
        return decode(ps, decoderIds, encoded, attentionMask, null, training);
    }

    /** Returns {@code [B, 1, 1, S]}: 0 for the encoder's tokens, the most negative float else. */
    private static NDArray paddingBias(NDArray like, NDArray attentionMask) {
        if (attentionMask == null) {
            return like.getManager().zeros(new Shape(1, 1, 1, like.getShape().get(1)));
        }
        Shape s = attentionMask.getShape();
        NDArray padding = attentionMask.toType(DataType.FLOAT32, false).neg().add(1);
        return padding.mul(-Float.MAX_VALUE).reshape(s.get(0), 1, 1, s.get(1));
    }

    /**
     * Returns how FSDP cuts T5 into units unless told otherwise: each {@link T5Block} of either
     * stack a unit and, when {@code lm_head} does not share the table's weight, the table and the
     * head each a unit of their own, as the decoder-only families' untied embedding and head are,
     * gathered only around their calls instead of through the whole step (at Flan-T5-large's
     * vocabulary of 32,128 and width 1024 each is 0.13 GB in float32). The table is one block that
     * both stacks hold as their {@code embed_tokens}: one unit, called once by each stack, and
     * never gathered in backward when it is frozen (its inputs are token ids). A tied table and
     * head stay in the root, which gathers their one weight once per pass; so do the final norms.
     * The blocks are looked up when the plan is made, so an adapter put on the head before then is
     * wrapped with it.
     *
     * @return the wrap policy
     */
    @Override
    public WrapPolicy defaultWrapPolicy() {
        WrapPolicy blocks = WrapPolicy.byLayerClass(T5Block.class.getSimpleName());
        return block ->
                blocks.shouldWrap(block)
                        || (!config.tieWordEmbeddings()
                                && (block == child("shared") || block == child("lm_head")));
    }

    /**
     * Returns T5's LoRA targets, as PEFT's mapping of model types to target modules gives them: the
     * query and value projections of every attention, self and cross.
     *
     * @return {@code [q, v]}
     */
    @Override
    public List<String> defaultLoraTargets() {
        return List.of("q", "v");
    }

    @Override
    public List<Parameter> vocabularyParameters() {
        Parameter table = child("shared").getParameters().get("weight");
        return config.tieWordEmbeddings()
                ? List.of(table)
                : List.of(table, child("lm_head").getParameters().get("weight"));
    }

    /** T5 stores no buffers: every checkpoint tensor is a parameter. */
    @Override
    public boolean isComputedBuffer(String name) {
        return false;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        if (inputs.size() < 2 || inputs.size() > 3) {
            throw new IllegalArgumentException(
                    "expected NDList(inputIds [B, S] [, attentionMask [B, S]], decoderInputIds"
                            + " [B, T]), got "
                            + inputs.size()
                            + " arrays");
        }
        NDArray ids = inputs.get(0);
        NDArray mask = inputs.size() == 3 ? inputs.get(1) : null;
        NDArray decoderIds = inputs.get(inputs.size() - 1);
        EncoderDecoderCache cache = EncoderDecoderCache.of(params);
        if (cache == null) {
            return new NDList(forward(ps, ids, mask, decoderIds, training));
        }
        if (cache.encoderStates() == null) {
            cache.setEncoderStates(encode(ps, ids, mask, training));
        }
        return new NDList(decode(ps, decoderIds, cache.encoderStates(), mask, cache, training));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        return new Shape[] {inputShapes[inputShapes.length - 1].add(config.vocabSize())};
    }
}
