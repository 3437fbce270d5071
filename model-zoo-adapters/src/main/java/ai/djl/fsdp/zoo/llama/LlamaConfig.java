package ai.djl.fsdp.zoo.llama;

import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.PretrainedConfig;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

/**
 * Hugging Face's {@code LlamaConfig}: the keys of a Llama {@code config.json}, with Hugging Face's
 * defaults for those that do not define the architecture. The families built on Llama's block
 * (Mistral, Qwen2, Qwen3) extend it with their own keys and say which of the block's variations
 * they use: biases on the projections, norms on the queries and keys, a sliding window.
 */
public class LlamaConfig extends PretrainedConfig {

    /** The {@code model_type} of Llama. */
    public static final String MODEL_TYPE = "llama";

    /** Llama: {@code LlamaForCausalLM} of {@code LlamaDecoderLayer}s. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    LlamaForCausalLM.class.getSimpleName(),
                    LlamaDecoderLayer.class,
                    LlamaConfig::fromJson);

    private static final String[] REQUIRED = {
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"
    };

    private int hiddenSize;
    private int intermediateSize;
    private int numHiddenLayers;
    private int numAttentionHeads;
    private Integer numKeyValueHeads;
    private Integer headDim;
    private String hiddenAct = "silu";
    private int maxPositionEmbeddings;
    private float rmsNormEps = 1e-6f;
    private double ropeTheta = 10000;
    private JsonElement ropeScaling;
    private boolean attentionBias;
    private boolean mlpBias;
    private transient RopeScaling rope;

    /** Creates a configuration for the binder to fill, 2048 positions by default as Llama's. */
    protected LlamaConfig() {
        this(2048);
    }

    /**
     * Creates a configuration for the binder to fill, with a family's default of {@code
     * max_position_embeddings} (Hugging Face's: Llama 2048, Mistral 131072, Qwen2 and Qwen3 32768),
     * which a file without the key gets.
     *
     * @param maxPositionEmbeddings the family's default {@code max_position_embeddings}
     */
    protected LlamaConfig(int maxPositionEmbeddings) {
        super(false);
        this.maxPositionEmbeddings = maxPositionEmbeddings;
    }

    /**
     * Reads a Llama configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static LlamaConfig fromJson(JsonObject json) {
        return bind(json, LlamaConfig.class);
    }

    /**
     * Binds and checks a configuration of Llama's block: the derived sizes filled in, then {@link
     * #validate()}.
     *
     * @param json the {@code config.json} object
     * @param type the family's configuration class
     * @param <C> the family's configuration class
     * @return the configuration
     * @throws IllegalArgumentException naming the key that is missing, wrong or not supported
     */
    protected static <C extends LlamaConfig> C bind(JsonObject json, Class<C> type) {
        C bound = ConfigJson.bind(json, type, REQUIRED);
        LlamaConfig config = bound;
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
        if (config.headDim % 2 != 0) {
            throw new IllegalArgumentException(
                    "head_dim " + config.headDim + " must be even: rotary embeddings rotate pairs");
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
                    config.family().modelType()
                            + " hidden_act "
                            + config.hiddenAct
                            + " is not supported; supported: silu");
        }
        if (!(config.ropeTheta > 0)) {
            throw new IllegalArgumentException(
                    "rope_theta "
                            + config.ropeTheta
                            + " must be positive: it is the base of the rotary frequencies"
                            + " (10000 for Llama 2, 500000 for Llama 3)");
        }
        if (!(config.rmsNormEps >= 0)) {
            throw new IllegalArgumentException(
                    "rms_norm_eps " + config.rmsNormEps + " must not be negative (1e-5 or 1e-6)");
        }
        config.rope = RopeScaling.of(config.ropeScaling);
        config.validate();
        return bound;
    }

    /**
     * Checks the keys of a family built on Llama's block; Llama itself has none of its own.
     *
     * @throws IllegalArgumentException naming the key that is wrong or not supported
     */
    protected void validate() {}

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
    public ModelFamily family() {
        return FAMILY;
    }

    @Override
    public int numLayers() {
        return numHiddenLayers;
    }

    @Override
    public int maxPositions() {
        return maxPositionEmbeddings;
    }

    /**
     * Returns {@code hidden_size}.
     *
     * @return the hidden size
     */
    @Override
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
     * Returns {@code rope_scaling}.
     *
     * @return how the rotary frequencies are rescaled
     */
    public RopeScaling ropeScaling() {
        return rope;
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
     * Returns whether the query, key and value projections have biases: {@code attention_bias}
     * unless the family fixes it (Qwen2 always has them).
     *
     * @return whether {@code q_proj}, {@code k_proj} and {@code v_proj} have biases
     */
    public boolean qkvBias() {
        return attentionBias;
    }

    /**
     * Returns whether the attention's output projection has a bias: {@code attention_bias} unless
     * the family fixes it (Qwen2 never has one).
     *
     * @return whether {@code o_proj} has a bias
     */
    public boolean outputBias() {
        return attentionBias;
    }

    /**
     * Returns whether each head's queries and keys are RMS-normalized before the rotation ({@code
     * self_attn.q_norm}, {@code self_attn.k_norm}: Qwen3).
     *
     * @return true if the attention has query and key norms
     */
    public boolean qkNorm() {
        return false;
    }

    /**
     * Returns the sliding attention window (Mistral's {@code sliding_window}): a query sees only
     * the last this many positions, itself included.
     *
     * @return the window, or 0 when attention is fully causal
     */
    public int slidingWindow() {
        return 0;
    }

    /**
     * Returns {@code mlp_bias}.
     *
     * @return whether the MLP projections have biases
     */
    public boolean mlpBias() {
        return mlpBias;
    }

    @Override
    public LlamaForCausalLM newModel() {
        return new LlamaForCausalLM(this);
    }
}
