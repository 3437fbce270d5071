package ai.djl.fsdp.zoo.gpt2;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.util.List;

/**
 * Hugging Face's {@code GPT2Config}: the keys of a GPT-2 {@code config.json}, with the same
 * defaults where Hugging Face has one that does not define the architecture.
 */
public final class GPT2Config implements ModelConfig {

    /** The {@code model_type} of GPT-2. */
    public static final String MODEL_TYPE = "gpt2";

    /** The activations GPT-2 checkpoints use; all are the tanh approximation of GELU. */
    private static final List<String> TANH_GELU =
            List.of("gelu_new", "gelu_pytorch_tanh", "gelu_fast");

    private int vocabSize;
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
    private float initializerRange = 0.02f;
    private boolean tieWordEmbeddings = true;
    private long bosTokenId = 50256;
    private JsonElement eosTokenId;

    private GPT2Config() {}

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
        if (!config.tieWordEmbeddings) {
            throw new IllegalArgumentException(
                    "GPT-2 with tie_word_embeddings=false is not supported");
        }
        if (config.eosTokenId == null) {
            config.eosTokenId = new JsonPrimitive(50256);
        }
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
    public String modelType() {
        return MODEL_TYPE;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int numLayers() {
        return nLayer;
    }

    @Override
    public int maxPositions() {
        return nPositions;
    }

    @Override
    public List<Long> eosTokenIds() {
        return ConfigJson.tokenIds(eosTokenId);
    }

    /**
     * Returns {@code n_embd}.
     *
     * @return the hidden size
     */
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
     * Returns {@code initializer_range}, the standard deviation of fresh weights.
     *
     * @return the initializer range
     */
    public float initializerRange() {
        return initializerRange;
    }

    /**
     * Returns the standard deviation of fresh weights in the projections into the residual stream
     * (attention and MLP {@code c_proj}): GPT-2 scales {@link #initializerRange()} by {@code 1 /
     * sqrt(2 * n_layer)}.
     *
     * @return the residual projections' initializer standard deviation
     */
    public float residualProjectionStd() {
        return (float) (initializerRange / Math.sqrt(2.0 * numLayers()));
    }

    @Override
    public GPT2LMHeadModel newModel() {
        return new GPT2LMHeadModel(this);
    }

    @Override
    public JsonObject toJson() {
        return ConfigJson.toJson(this, MODEL_TYPE, GPT2LMHeadModel.class.getSimpleName());
    }
}
