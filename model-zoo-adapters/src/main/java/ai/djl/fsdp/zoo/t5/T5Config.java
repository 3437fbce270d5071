package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.PretrainedConfig;
import com.google.gson.JsonObject;
import java.util.List;

/**
 * Hugging Face's {@code T5Config}: the keys of a T5, T5 v1.1 or Flan-T5 {@code config.json}, with
 * Hugging Face's defaults for those that do not define the architecture. The sizes and {@code
 * decoder_start_token_id} (without which Hugging Face cannot shift labels right either) are
 * required; settings this implementation does not compute are refused, each in one line naming its
 * key: a {@code feed_forward_proj} other than {@code relu} (T5) and {@code gated-gelu} (T5 v1.1,
 * Flan-T5), {@code is_encoder_decoder} false, {@code tie_encoder_decoder} true, relative-position
 * buckets too few for the distance.
 */
public final class T5Config extends PretrainedConfig implements EncoderDecoderConfig {

    /** The {@code model_type} of T5. */
    public static final String MODEL_TYPE = "t5";

    /** T5: {@code T5ForConditionalGeneration} of {@code T5Block}s, in the encoder and decoder. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    T5ForConditionalGeneration.class.getSimpleName(),
                    T5Block.class,
                    T5Config::fromJson);

    /** The supported {@code feed_forward_proj} values. */
    public static final List<String> FEED_FORWARD_PROJECTIONS = List.of("relu", "gated-gelu");

    private static final String[] REQUIRED = {
        "vocab_size", "d_model", "d_kv", "d_ff", "num_layers", "num_heads", "decoder_start_token_id"
    };

    private int dModel;
    private int dKv;
    private int dFf;
    private int numLayers;
    private Integer numDecoderLayers;
    private int numHeads;
    private int relativeAttentionNumBuckets = 32;
    private int relativeAttentionMaxDistance = 128;
    private float dropoutRate = 0.1f;
    private float layerNormEpsilon = 1e-6f;
    private float initializerFactor = 1.0f;
    private String feedForwardProj = "relu";
    private boolean isEncoderDecoder = true;
    private boolean tieEncoderDecoder;
    private long padTokenId;
    private long decoderStartTokenId;

    private T5Config() {
        super(true);
    }

    /**
     * Reads a T5 configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     * @throws IllegalArgumentException naming the key that is missing, wrong or not supported
     */
    public static T5Config fromJson(JsonObject json) {
        T5Config config = ConfigJson.bind(json, T5Config.class, REQUIRED);
        if (config.numDecoderLayers == null) {
            config.numDecoderLayers = config.numLayers;
        }
        if (!FEED_FORWARD_PROJECTIONS.contains(config.feedForwardProj)) {
            throw new IllegalArgumentException(
                    "feed_forward_proj \""
                            + config.feedForwardProj
                            + "\" is not supported; supported: relu (T5), gated-gelu (T5 v1.1,"
                            + " Flan-T5)");
        }
        if (!config.isEncoderDecoder) {
            throw new IllegalArgumentException(
                    "is_encoder_decoder false is not supported: T5 here is the encoder-decoder"
                            + " T5ForConditionalGeneration; set it to true");
        }
        if (config.tieEncoderDecoder) {
            throw new IllegalArgumentException(
                    "tie_encoder_decoder true is not supported: the encoder and decoder hold"
                            + " weights of their own; set it to false");
        }
        int half = config.relativeAttentionNumBuckets / 2;
        if (half < 2 || config.relativeAttentionMaxDistance <= half) {
            throw new IllegalArgumentException(
                    "relative_attention_num_buckets "
                            + config.relativeAttentionNumBuckets
                            + " must be at least 4 and relative_attention_max_distance "
                            + config.relativeAttentionMaxDistance
                            + " greater than half of it (T5: 32 and 128)");
        }
        if (!(config.dropoutRate >= 0 && config.dropoutRate < 1)) {
            throw new IllegalArgumentException(
                    "dropout_rate " + config.dropoutRate + " must be in [0, 1) (T5: 0.1)");
        }
        if (!(config.layerNormEpsilon >= 0)) {
            throw new IllegalArgumentException(
                    "layer_norm_epsilon " + config.layerNormEpsilon + " must not be negative");
        }
        return config;
    }

    /**
     * Returns a configuration for tests and demonstrations.
     *
     * @param vocab {@code vocab_size}
     * @param width {@code d_model}
     * @param heads {@code num_heads}, of {@code width / heads} each ({@code d_kv})
     * @param inner {@code d_ff}
     * @param encoderLayers {@code num_layers}
     * @param decoderLayers {@code num_decoder_layers}
     * @param feedForward {@code feed_forward_proj}: {@code relu} or {@code gated-gelu}
     * @return the configuration, without dropout, tied for {@code relu} and untied for {@code
     *     gated-gelu} as the released models are
     */
    public static T5Config of(
            int vocab,
            int width,
            int heads,
            int inner,
            int encoderLayers,
            int decoderLayers,
            String feedForward) {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", MODEL_TYPE);
        json.addProperty("vocab_size", vocab);
        json.addProperty("d_model", width);
        json.addProperty("d_kv", width / heads);
        json.addProperty("d_ff", inner);
        json.addProperty("num_layers", encoderLayers);
        json.addProperty("num_decoder_layers", decoderLayers);
        json.addProperty("num_heads", heads);
        json.addProperty("feed_forward_proj", feedForward);
        json.addProperty("tie_word_embeddings", !feedForward.startsWith("gated"));
        json.addProperty("dropout_rate", 0.0);
        json.addProperty("pad_token_id", 0);
        json.addProperty("eos_token_id", 1);
        json.addProperty("decoder_start_token_id", 0);
        return fromJson(json);
    }

    @Override
    public ModelFamily family() {
        return FAMILY;
    }

    /**
     * Returns {@code d_model}.
     *
     * @return the width of the hidden states
     */
    @Override
    public int hiddenSize() {
        return dModel;
    }

    /**
     * Returns {@code num_layers}.
     *
     * @return the encoder's blocks
     */
    @Override
    public int numLayers() {
        return numLayers;
    }

    /**
     * Returns no limit: relative position buckets cover a sequence of any length.
     *
     * @return {@link Integer#MAX_VALUE}
     */
    @Override
    public int maxPositions() {
        return Integer.MAX_VALUE;
    }

    /**
     * Returns {@code num_decoder_layers} ({@code num_layers} when not set).
     *
     * @return the decoder's blocks
     */
    @Override
    public int numDecoderLayers() {
        return numDecoderLayers;
    }

    /**
     * Returns {@code d_kv}, the size of each head (heads times it need not equal {@code d_model}).
     *
     * @return the head size
     */
    public int headDim() {
        return dKv;
    }

    /**
     * Returns {@code num_heads}.
     *
     * @return the attention heads
     */
    public int numHeads() {
        return numHeads;
    }

    /**
     * Returns {@code d_ff}.
     *
     * @return the feed-forward block's inner size
     */
    public int feedForwardSize() {
        return dFf;
    }

    /**
     * Returns whether the feed-forward block is gated ({@code gated-gelu}: {@code gelu_new(wi_0 x)
     * * wi_1 x}) rather than {@code relu(wi x)}.
     *
     * @return true for {@code gated-gelu}
     */
    public boolean gatedFeedForward() {
        return feedForwardProj.startsWith("gated");
    }

    /**
     * Returns {@code relative_attention_num_buckets}.
     *
     * @return the relative position buckets
     */
    public int relativeAttentionNumBuckets() {
        return relativeAttentionNumBuckets;
    }

    /**
     * Returns {@code relative_attention_max_distance}.
     *
     * @return the distance from which all positions share a bucket
     */
    public int relativeAttentionMaxDistance() {
        return relativeAttentionMaxDistance;
    }

    /**
     * Returns {@code dropout_rate}.
     *
     * @return the dropout probability
     */
    public float dropoutRate() {
        return dropoutRate;
    }

    /**
     * Returns {@code layer_norm_epsilon}.
     *
     * @return the RMS norm epsilon
     */
    public float layerNormEpsilon() {
        return layerNormEpsilon;
    }

    /**
     * Returns {@code initializer_factor}, which scales every fresh weight's standard deviation.
     *
     * @return the initializer factor
     */
    public float initializerFactor() {
        return initializerFactor;
    }

    /**
     * Returns {@code pad_token_id}: what shifted labels hold where a label is ignored.
     *
     * @return the padding token
     */
    @Override
    public long padTokenId() {
        return padTokenId;
    }

    /**
     * Returns {@code decoder_start_token_id}: the decoder's first input.
     *
     * @return the decoder's start token
     */
    @Override
    public long decoderStartTokenId() {
        return decoderStartTokenId;
    }

    @Override
    public T5ForConditionalGeneration newModel() {
        return new T5ForConditionalGeneration(this);
    }
}
