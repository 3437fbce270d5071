package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.PretrainedConfig;
import com.google.gson.JsonObject;
import java.util.List;

/**
 * Hugging Face's {@code GPT2Config}: the keys of a GPT-2 {@code config.json}, with the same
 * defaults where Hugging Face has one that does not define the architecture.
 */
public final class GPT2Config extends PretrainedConfig {

    /** The {@code model_type} of GPT-2. */
    public static final String MODEL_TYPE = "gpt2";

    /** GPT-2: {@code GPT2LMHeadModel} of {@code GPT2Block}s. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    GPT2LMHeadModel.class.getSimpleName(),
                    GPT2Block.class,
                    GPT2Config::fromJson);

    /** GPT-2's {@code <|endoftext|>}, its default first and last token. */
    private static final long END_OF_TEXT = 50256;

    /** The activations GPT-2 checkpoints use; all are the tanh approximation of GELU. */
    private static final List<String> TANH_GELU =
            List.of("gelu_new", "gelu_pytorch_tanh", "gelu_fast");

    private int nPositions;
    private int nEmbd;
    private int nLayer;
    private int nHead;
    private Integer nInner;
    private String activationFunction = "gelu_new";
    private float residPdrop = 0.1f;
    private float embdPdrop = 0.1f;
    private float attnPdrop = 0.1f;
    private float layerNormEpsilon = 1e-5f;

    private GPT2Config() {
        super(true);
    }

    /**
     * Reads a GPT-2 configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static GPT2Config fromJson(JsonObject json) {
        GPT2Config config =
                ConfigJson.bind(
                        json,
                        GPT2Config.class,
                        "vocab_size",
                        "n_positions",
                        "n_embd",
                        "n_layer",
                        "n_head");
        if (config.nEmbd % config.nHead != 0) {
            throw new IllegalArgumentException(
                    "n_embd " + config.nEmbd + " is not a multiple of n_head " + config.nHead);
        }
        if (!TANH_GELU.contains(config.activationFunction)) {
            throw new IllegalArgumentException(
                    "GPT-2 activation_function "
                            + config.activationFunction
                            + " is not supported; supported: "
                            + TANH_GELU);
        }
        if (!config.tieWordEmbeddings()) {
            throw new IllegalArgumentException(
                    "GPT-2 with tie_word_embeddings=false is not supported");
        }
        config.defaultTokenIds(END_OF_TEXT, END_OF_TEXT);
        return config;
    }

    /**
     * Returns a configuration for tests and experiments: GPT-2's vocabulary with a small network.
     *
     * @param layers the number of blocks
     * @param width {@code n_embd}
     * @param heads {@code n_head}
     * @param positions {@code n_positions}
     * @return the configuration
     */
    public static GPT2Config of(int layers, int width, int heads, int positions) {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", MODEL_TYPE);
        json.addProperty("vocab_size", 50257);
        json.addProperty("n_positions", positions);
        json.addProperty("n_embd", width);
        json.addProperty("n_layer", layers);
        json.addProperty("n_head", heads);
        return fromJson(json);
    }

    @Override
    public ModelFamily family() {
        return FAMILY;
    }

    @Override
    public int numLayers() {
        return nLayer;
    }

    @Override
    public int maxPositions() {
        return nPositions;
    }

    /**
     * Returns {@code n_embd}.
     *
     * @return the hidden size
     */
    @Override
    public int hiddenSize() {
        return nEmbd;
    }

    /**
     * Returns {@code n_head}.
     *
     * @return the number of attention heads
     */
    public int numHeads() {
        return nHead;
    }

    /**
     * Returns {@code n_inner}, or {@code 4 * n_embd} when unset.
     *
     * @return the MLP's inner size
     */
    public int innerSize() {
        return nInner == null ? 4 * nEmbd : nInner;
    }

    /**
     * Returns {@code resid_pdrop}.
     *
     * @return the residual dropout
     */
    public float residualDropout() {
        return residPdrop;
    }

    /**
     * Returns {@code embd_pdrop}.
     *
     * @return the embedding dropout
     */
    public float embeddingDropout() {
        return embdPdrop;
    }

    /**
     * Returns {@code attn_pdrop}.
     *
     * @return the attention dropout
     */
    public float attentionDropout() {
        return attnPdrop;
    }

    /**
     * Returns {@code layer_norm_epsilon}.
     *
     * @return the layer norm epsilon
     */
    public float layerNormEpsilon() {
        return layerNormEpsilon;
    }

    /**
     * Returns the standard deviation of fresh weights in the projections into the residual stream
     * (attention and MLP {@code c_proj}): GPT-2 scales {@link #initializerRange()} by {@code 1 /
     * sqrt(2 * n_layer)}.
     *
     * @return the residual projections' initializer standard deviation
     */
    public float residualProjectionStd() {
        return (float) (initializerRange() / Math.sqrt(2.0 * numLayers()));
    }

    @Override
    public GPT2LMHeadModel newModel() {
        return new GPT2LMHeadModel(this);
    }
}
