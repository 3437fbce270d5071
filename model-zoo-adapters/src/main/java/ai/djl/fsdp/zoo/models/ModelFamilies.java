package ai.djl.fsdp.zoo.models;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.mistral.MistralConfig;
import ai.djl.fsdp.zoo.qwen2.Qwen2Config;
import ai.djl.fsdp.zoo.qwen3.Qwen3Config;
import ai.djl.fsdp.zoo.t5.T5Config;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The model families the zoo supports, the one place a family is registered: a {@code config.json}
 * is read by the family its {@code model_type} names. A new family declares its {@link ModelFamily}
 * in its configuration class and is added to {@link #ALL}.
 */
public final class ModelFamilies {

    /** GPT-2, Llama (2 and 3.x), Mistral, Qwen2 (and 2.5), Qwen3; T5 (v1.1, Flan-T5). */
    private static final List<ModelFamily> ALL =
            List.of(
                    GPT2Config.FAMILY,
                    LlamaConfig.FAMILY,
                    MistralConfig.FAMILY,
                    Qwen2Config.FAMILY,
                    Qwen3Config.FAMILY,
                    T5Config.FAMILY);

    private ModelFamilies() {}

    /**
     * Returns the supported families.
     *
     * @return the families, GPT-2 first
     */
    public static List<ModelFamily> all() {
        return ALL;
    }

    /**
     * Returns the supported {@code model_type}s.
     *
     * @return the model types
     */
    public static List<String> modelTypes() {
        return ALL.stream().map(ModelFamily::modelType).toList();
    }

    /**
     * Returns the family of a {@code model_type}.
     *
     * @param modelType the model type
     * @return the family
     * @throws IllegalArgumentException listing the supported model types
     */
    public static ModelFamily of(String modelType) {
        for (ModelFamily family : ALL) {
            if (family.modelType().equals(modelType)) {
                return family;
            }
        }
        throw new IllegalArgumentException(
                "model_type \"" + modelType + "\" is not supported; supported: " + modelTypes());
    }

    /**
     * Reads a configuration, choosing the family by {@code model_type}.
     *
     * @param path a {@code config.json}, or the model directory holding it
     * @return the configuration
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException if it is not valid, or the model type is not supported; the
     *     message names the file
     */
    public static ModelConfig read(Path path) throws IOException {
        JsonObject json = ConfigJson.readObject(path);
        try {
            return parse(json);
        } catch (IllegalArgumentException e) {
            IllegalArgumentException failure =
                    new IllegalArgumentException(ConfigJson.file(path) + ": " + e.getMessage());
            failure.addSuppressed(e);
            throw failure;
        }
    }

    /**
     * Parses a configuration, choosing the family by {@code model_type}.
     *
     * @param json the configuration object
     * @return the configuration
     * @throws IllegalArgumentException if a key is missing or has the wrong type or range, or the
     *     model type is not supported; the message names the key
     */
    public static ModelConfig parse(JsonObject json) {
        JsonElement type = json.get("model_type");
        if (!(type instanceof JsonPrimitive p && p.isString())) {
            throw new IllegalArgumentException(
                    "\"model_type\" is missing or not a string: set it to one of " + modelTypes());
        }
        QuantizationConfig.of(json); // a pre-quantized checkpoint's block is checked now
        ModelConfig config = of(type.getAsString()).parse(json);
        config.eosTokenIds(); // checks eos_token_id now rather than when generating
        return config;
    }

    /**
     * Returns a configuration with another vocabulary size ({@code vocab_size}), every other key as
     * it is: a checkpoint's configuration once its vocabulary grows.
     *
     * @param config the configuration
     * @param vocabSize the vocabulary size
     * @return the configuration of that size
     */
    public static ModelConfig withVocabSize(ModelConfig config, int vocabSize) {
        JsonObject json = config.toJson();
        json.addProperty("vocab_size", vocabSize);
        return parse(json);
    }
}
