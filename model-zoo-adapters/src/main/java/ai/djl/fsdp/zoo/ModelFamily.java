package ai.djl.fsdp.zoo;

import ai.djl.nn.Block;
import com.google.gson.JsonObject;
import java.util.function.Function;

/**
 * A model family as Hugging Face names it: the {@code model_type} of its {@code config.json}, the
 * class that reads that file, the repeated decoder layer FSDP wraps (Accelerate's {@code
 * fsdp_transformer_layer_cls_to_wrap} names it by its simple class name) and the {@code
 * architectures} entry a saved {@code config.json} carries. Each family declares its own in its
 * configuration class; {@code ai.djl.fsdp.zoo.models.ModelFamilies} lists the supported ones.
 *
 * @param modelType the {@code model_type}, such as {@code llama}
 * @param architecture the {@code architectures} entry, such as {@code LlamaForCausalLM}
 * @param decoderLayer the decoder layer class, such as {@code LlamaDecoderLayer}
 * @param parser reads a {@code config.json} object of this family, checking it
 */
public record ModelFamily(
        String modelType,
        String architecture,
        Class<? extends Block> decoderLayer,
        Function<JsonObject, ? extends ModelConfig> parser) {

    /**
     * Reads a {@code config.json} object of this family.
     *
     * @param json the configuration object
     * @return the configuration
     * @throws IllegalArgumentException naming the key that is missing, wrong or not supported
     */
    public ModelConfig parse(JsonObject json) {
        return parser.apply(json);
    }
}
