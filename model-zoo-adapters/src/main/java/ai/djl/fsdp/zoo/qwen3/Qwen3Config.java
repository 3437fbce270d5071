package ai.djl.fsdp.zoo.qwen3;

import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.llama.LlamaForCausalLM;
import ai.djl.fsdp.zoo.qwen2.Qwen2Config;
import com.google.gson.JsonObject;

/**
 * Hugging Face's {@code Qwen3Config} (the dense Qwen3 models): Qwen2's keys, with RMS norms over
 * each head's queries and keys before the rotation, projection biases only where {@code
 * attention_bias} says (false by default), and {@code head_dim} its own key, 128 when absent as in
 * Hugging Face, whatever {@code hidden_size / num_attention_heads} is.
 */
public final class Qwen3Config extends Qwen2Config {

    /** The {@code model_type} of Qwen3. */
    public static final String MODEL_TYPE = "qwen3";

    /** Qwen3: {@code Qwen3ForCausalLM} of {@code Qwen3DecoderLayer}s. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    Qwen3ForCausalLM.class.getSimpleName(),
                    Qwen3DecoderLayer.class,
                    Qwen3Config::fromJson);

    /** Hugging Face's default {@code head_dim} of Qwen3. */
    private static final int HEAD_DIM = 128;

    /** Creates a configuration for the binder to fill: Qwen2's 32768 positions by default. */
    private Qwen3Config() {}

    /**
     * Reads a Qwen3 configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static Qwen3Config fromJson(JsonObject json) {
        JsonObject withDefaults = json.deepCopy();
        if (!json.has("head_dim") || json.get("head_dim").isJsonNull()) {
            withDefaults.addProperty("head_dim", HEAD_DIM);
        }
        return bind(withDefaults, Qwen3Config.class);
    }

    @Override
    public ModelFamily family() {
        return FAMILY;
    }

    @Override
    public boolean qkvBias() {
        return attentionBias();
    }

    @Override
    public boolean outputBias() {
        return attentionBias();
    }

    @Override
    public boolean qkNorm() {
        return true;
    }

    @Override
    public LlamaForCausalLM newModel() {
        return new Qwen3ForCausalLM(this);
    }
}
