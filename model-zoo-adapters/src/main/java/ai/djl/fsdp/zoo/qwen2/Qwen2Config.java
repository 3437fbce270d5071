package ai.djl.fsdp.zoo.qwen2;

import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.llama.LlamaForCausalLM;
import com.google.gson.JsonObject;

/**
 * Hugging Face's {@code Qwen2Config} (Qwen2 and Qwen2.5): Llama's keys, with biases on the query,
 * key and value projections and none on the output one, whatever {@code attention_bias} says
 * (Hugging Face's Qwen2 has no such key). The shipped models keep {@code use_sliding_window} false;
 * true (a window on the layers from {@code max_window_layers} on) is refused.
 */
public class Qwen2Config extends LlamaConfig {

    /** The {@code model_type} of Qwen2 and Qwen2.5. */
    public static final String MODEL_TYPE = "qwen2";

    /** Qwen2: {@code Qwen2ForCausalLM} of {@code Qwen2DecoderLayer}s. */
    public static final ModelFamily FAMILY =
            new ModelFamily(
                    MODEL_TYPE,
                    Qwen2ForCausalLM.class.getSimpleName(),
                    Qwen2DecoderLayer.class,
                    Qwen2Config::fromJson);

    private boolean useSlidingWindow;
    private Integer slidingWindow;
    private Integer maxWindowLayers;

    /** Creates a configuration for the binder to fill: 32768 positions by default, as HF's. */
    protected Qwen2Config() {
        super(32768);
    }

    /**
     * Reads a Qwen2 configuration.
     *
     * @param json the {@code config.json} object
     * @return the configuration
     */
    public static Qwen2Config fromJson(JsonObject json) {
        return bind(json, Qwen2Config.class);
    }

    @Override
    protected void validate() {
        if (useSlidingWindow) {
            throw new IllegalArgumentException(
                    family().modelType()
                            + " use_sliding_window true (sliding_window "
                            + slidingWindow
                            + " from layer max_window_layers "
                            + maxWindowLayers
                            + " on) is not supported: set it to false, as the released models"
                            + " ship it");
        }
        if (mlpBias()) {
            throw new IllegalArgumentException(
                    family().modelType()
                            + "'s MLP has no biases: remove mlp_bias from config.json, or set"
                            + " model_type llama for a Llama with biases");
        }
    }

    @Override
    public ModelFamily family() {
        return FAMILY;
    }

    /** Qwen2's query, key and value projections always have biases. */
    @Override
    public boolean qkvBias() {
        return true;
    }

    /** Qwen2's output projection never has one. */
    @Override
    public boolean outputBias() {
        return false;
    }

    @Override
    public LlamaForCausalLM newModel() {
        return new Qwen2ForCausalLM(this);
    }
}
