package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.List;

/**
 * Hugging Face's {@code LlamaConfig}: the keys of a Llama {@code config.json}, with Hugging Face's
 * defaults for those that do not define the architecture.
 */
public final class LlamaConfig implements ModelConfig {

    /** The {@code model_type} of Llama. */
    public static final String MODEL_TYPE = "llama";

    private int vocabSize;
    private int hiddenSize;
    private int intermediateSize;
    private int numHiddenLayers;
    private int numAttentionHeads;
    private Integer numKeyValueHeads;
    private Integer headDim;
    private String hiddenAct = "silu";
    private int maxPositionEmbeddings = 2048;
    private float rmsNormEps = 1e-6f;
    private double ropeTheta = 10000;
    private JsonElement ropeScaling;
    private boolean attentionBias;
    private boolean mlpBias;
    private boolean tieWordEmbeddings;
    private float initializerRange = 0.02f;
    private JsonElement bosTokenId;
    private JsonElement eosTokenId;

    private LlamaConfig() {}

    /**
     * Reads a Llama configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static LlamaConfig fromJson(JsonObject json) {
        LlamaConfig config =
                ConfigJson.bind(
                        json,
                        LlamaConfig.class,
                        "vocab_size",
                        "hidden_size",
                        "intermediate_size",
                        "num_hidden_layers",
                        "num_attention_heads");
        if (config.numKeyValueHeads == null) {
            config.numKeyValueHeads = config.numAttentionHeads;
        }
        if (config.headDim == null) {
            if (config.hiddenSize % config.numAttentionHeads != 0) {
                throw new IllegalArgumentException(
                        "hidden_size "
                                + config.hiddenSize
                                + " is not a multiple of num_attention_heads "
                                + config.numAttentionHeads
                                + " and head_dim is not set");
            }
            config.headDim = config.hiddenSize / config.numAttentionHeads;
        }
        if (config.numAttentionHeads % config.numKeyValueHeads != 0) {
            throw new IllegalArgumentException(
                    "num_attention_heads "
                            + config.numAttentionHeads
                            + " is not a multiple of num_key_value_heads "
                            + config.numKeyValueHeads);
        }
        if (!"silu".equals(config.hiddenAct)) {
            throw new IllegalArgumentException(
                    "Llama hidden_act " + config.hiddenAct + " is not supported; supported: silu");
        }
        if (config.ropeScaling != null && !config.ropeScaling.isJsonNull()) {
            throw new IllegalArgumentException(
                    "rope_scaling "
                            + config.ropeScaling
                            + " is not supported yet; only plain RoPE with rope_theta");
        }
        return config;
    }

    /**
     * Returns a configuration for tests and experiments: GPT-2's vocabulary with a small network.
     *
     * @param layers the number of decoder layers
     * @param width {@code hidden_size}
     * @param heads {@code num_attention_heads}
     * @param kvHeads {@code num_key_value_heads}
     * @param intermediate {@code intermediate_size}
     * @param positions {@code max_position_embeddings}
     * @return the configuration
     */
    public static LlamaConfig of(
            int layers, int width, int heads, int kvHeads, int intermediate, int positions) {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", MODEL_TYPE);
        json.addProperty("vocab_size", 50257);
        json.addProperty("hidden_size", width);
        json.addProperty("intermediate_size", intermediate);
        json.addProperty("num_hidden_layers", layers);
        json.addProperty("num_attention_heads", heads);
        json.addProperty("num_key_value_heads", kvHeads);
        json.addProperty("max_position_embeddings", positions);
        json.addProperty("bos_token_id", 50256);
        json.addProperty("eos_token_id", 50256);
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
        return numHiddenLayers;
    }

    @Override
    public int maxPositions() {
        return maxPositionEmbeddings;
    }

    @Override
    public List<Long> eosTokenIds() {
        return ConfigJson.tokenIds(eosTokenId);
    }

    /**
     * Returns {@code hidden_size}.
     *
     * @return the hidden size
     */
    public int hiddenSize() {
        return hiddenSize;
    }

    /**
     * Returns {@code intermediate_size}.
     *
     * @return the MLP's inner size
     */
    public int intermediateSize() {
        return intermediateSize;
    }

    /**
     * Returns {@code num_attention_heads}.
     *
     * @return the number of query heads
     */
    public int numHeads() {
        return numAttentionHeads;
    }

    /**
     * Returns {@code num_key_value_heads} (grouped-query attention when fewer than the query
     * heads).
     *
     * @return the number of key-value heads
     */
    public int numKeyValueHeads() {
        return numKeyValueHeads;
    }

    /**
     * Returns {@code head_dim}.
     *
     * @return the head size
     */
    public int headDim() {
        return headDim;
    }

    /**
     * Returns {@code rms_norm_eps}.
     *
     * @return the RMS norm epsilon
     */
    public float rmsNormEps() {
        return rmsNormEps;
    }

    /**
     * Returns {@code rope_theta}, the base of the rotary frequencies.
     *
     * @return the RoPE base
     */
    public double ropeTheta() {
        return ropeTheta;
    }

    /**
     * Returns {@code attention_bias}.
     *
     * @return whether the attention projections have biases
     */
    public boolean attentionBias() {
        return attentionBias;
    }

    /**
     * Returns {@code mlp_bias}.
     *
     * @return whether the MLP projections have biases
     */
    public boolean mlpBias() {
        return mlpBias;
    }

    /**
     * Returns {@code tie_word_embeddings}.
     *
     * @return whether the head shares the token embedding
     */
    public boolean tieWordEmbeddings() {
        return tieWordEmbeddings;
    }

    /**
     * Returns {@code initializer_range}.
     *
     * @return the standard deviation of fresh weights
     */
    public float initializerRange() {
        return initializerRange;
    }

    @Override
    public LlamaForCausalLM newModel() {
        return new LlamaForCausalLM(this);
    }

    @Override
    public JsonObject toJson() {
        return ConfigJson.toJson(this, MODEL_TYPE, LlamaForCausalLM.class.getSimpleName());
    }
}
