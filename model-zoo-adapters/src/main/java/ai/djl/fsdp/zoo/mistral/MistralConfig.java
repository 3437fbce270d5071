package ai.djl.fsdp.zoo.mistral;

import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;

/**
 * Hugging Face's {@code MistralConfig}: Llama's keys and {@code sliding_window}, the number of
 * positions each query attends to (itself included). As in Hugging Face, a file without the key
 * gets 4096 (Mistral 7B v0.1's), and {@code null} means no window (v0.2 and later); one without
 * {@code max_position_embeddings} gets 4096 x 32 = 131072.
 */
public final class MistralConfig extends LlamaConfig {

    /** The {@code model_type} of Mistral. */
    public static final String MODEL_TYPE = "mistral";

    /** Mistral: {@code MistralForCausalLM} of {@code MistralDecoderLayer}s. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    MistralForCausalLM.class.getSimpleName(),
                    MistralDecoderLayer.class,
                    MistralConfig::fromJson);

    private Integer slidingWindow = 4096;

    /** Creates a configuration for the binder to fill: 131072 (4096 x 32) positions by default. */
    private MistralConfig() {
        super(4096 * 32);
    }

    /**
     * Reads a Mistral configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static MistralConfig fromJson(JsonObject json) {
        return bind(json, MistralConfig.class);
    }

    @Override
    protected void validate() {
        if (attentionBias() || mlpBias()) {
            throw new IllegalArgumentException(
                    "Mistral's projections have no biases (Hugging Face's MistralConfig ignores"
                            + " attention_bias and mlp_bias): remove them from config.json, or set"
                            + " model_type llama for a Llama with biases");
        }
    }

    @Override
    public ModelFamily family() {
        return FAMILY;
    }

    @Override
    public int slidingWindow() {
        return slidingWindow == null ? 0 : slidingWindow;
    }

    /** Writes {@code sliding_window: null} too: without the key a reader would take 4096. */
    @Override
    public JsonObject toJson() {
        JsonObject json = super.toJson();
        if (slidingWindow == null) {
            json.add("sliding_window", JsonNull.INSTANCE);
        }
        return json;
    }

    @Override
    public MistralForCausalLM newModel() {
        return new MistralForCausalLM(this);
    }
}
