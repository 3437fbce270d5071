package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.safetensors.AtomicFiles;
import ai.djl.fsdp.safetensors.JsonText;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import com.google.gson.FieldNamingPolicy;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads and writes Hugging Face {@code config.json}. Keys map to fields by Hugging Face's
 * snake_case names; unknown keys are ignored (as Hugging Face ignores them), and a missing required
 * key is an error naming it.
 */
public final class ConfigJson {

    /** The file name of a model's configuration. */
    public static final String FILE = "config.json";

    /** Maps {@code camelCase} fields to {@code snake_case} keys. */
    static final Gson GSON =
            new GsonBuilder()
                    .setFieldNamingPolicy(FieldNamingPolicy.LOWER_CASE_WITH_UNDERSCORES)
                    .setPrettyPrinting()
                    .create();

    private static final List<String> SUPPORTED =
            List.of(GPT2Config.MODEL_TYPE, LlamaConfig.MODEL_TYPE);

    private static final String FIX =
            ": pass a Hugging Face model directory whose config.json is intact";

    private ConfigJson() {}

    /**
     * Reads a configuration, choosing the class by {@code model_type}.
     *
     * @param path a {@code config.json}, or the model directory holding it
     * @return the configuration
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException if it is not valid, or the model type is not supported
     */
    public static ModelConfig read(Path path) throws IOException {
        Path file = Files.isDirectory(path) ? path.resolve(FILE) : path;
        JsonElement root;
        try {
            root = JsonText.parse(Files.readString(file), false);
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(file + " is not UTF-8 text" + FIX);
        } catch (JsonParseException e) {
            IllegalArgumentException failure =
                    new IllegalArgumentException(
                            file + " is not valid JSON: " + JsonText.describe(e) + FIX);
            failure.addSuppressed(e);
            throw failure;
        }
        if (!root.isJsonObject()) {
            throw new IllegalArgumentException(file + " is not a JSON object" + FIX);
        }
        try {
            return parse(root.getAsJsonObject());
        } catch (IllegalArgumentException e) {
            IllegalArgumentException failure =
                    new IllegalArgumentException(file + ": " + e.getMessage());
            failure.addSuppressed(e);
            throw failure;
        }
    }

    /**
     * Parses a configuration, choosing the class by {@code model_type}.
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
                    "\"model_type\" is missing or not a string: set it to one of " + SUPPORTED);
        }
        ModelConfig config =
                switch (type.getAsString()) {
                    case GPT2Config.MODEL_TYPE -> GPT2Config.fromJson(json);
                    case LlamaConfig.MODEL_TYPE -> LlamaConfig.fromJson(json);
                    default ->
                            throw new IllegalArgumentException(
                                    "model_type "
                                            + type
                                            + " is not supported; supported: "
                                            + SUPPORTED);
                };
        config.eosTokenIds(); // checks eos_token_id now rather than when generating
        return config;
    }

    /**
     * Binds a configuration object to a class after checking that the required keys are present and
     * that every key the class has a field for holds a value of the field's type: an {@code int}
     * field is a size and must be a positive integer that fits in an int, a {@code long} a
     * non-negative integer, a {@code float} or {@code double} a finite number, a {@code boolean} or
     * {@code String} one of those.
     *
     * @param json the configuration object
     * @param type the configuration class, whose fields are the snake_case keys in camelCase
     * @param required the keys that have no default
     * @param <T> the configuration class
     * @return the bound configuration
     * @throws IllegalArgumentException naming the first key that is missing or wrong
     */
    public static <T> T bind(JsonObject json, Class<T> type, String... required) {
        List<String> missing = new ArrayList<>();
        for (String key : required) {
            if (!json.has(key) || json.get(key).isJsonNull()) {
                missing.add(key);
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(
                    "model_type " + json.get("model_type") + " lacks required keys " + missing);
        }
        for (Field field : type.getDeclaredFields()) {
            String key = FieldNamingPolicy.LOWER_CASE_WITH_UNDERSCORES.translateName(field);
            JsonElement value = json.get(key);
            if (!Modifier.isStatic(field.getModifiers()) && value != null && !value.isJsonNull()) {
                ConfigValues.check(key, value, field.getType());
            }
        }
        return GSON.fromJson(json, type);
    }

    /**
     * Serializes a configuration object's fields with snake_case keys.
     *
     * @param config the configuration
     * @param modelType its {@code model_type}
     * @param architecture its {@code architectures} entry
     * @return the JSON object
     */
    public static JsonObject toJson(Object config, String modelType, String architecture) {
        JsonObject json = GSON.toJsonTree(config).getAsJsonObject();
        json.addProperty("model_type", modelType);
        JsonArray architectures = new JsonArray();
        architectures.add(architecture);
        json.add("architectures", architectures);
        return json;
    }

    /**
     * Writes {@code config.json} into a model directory, atomically.
     *
     * @param config the configuration
     * @param directory the model directory
     * @throws IOException if writing fails
     */
    public static void write(ModelConfig config, Path directory) throws IOException {
        AtomicFiles.writeString(directory.resolve(FILE), GSON.toJson(config.toJson()));
    }

    /**
     * Writes a configuration as {@code config.json} with the {@code torch_dtype} its weights are
     * stored in, as Hugging Face's {@code save_pretrained} records it.
     *
     * @param config the configuration
     * @param directory the checkpoint directory
     * @param torchDtype {@code float32}, {@code bfloat16} or {@code float16}
     * @throws IOException if writing fails
     */
    public static void write(ModelConfig config, Path directory, String torchDtype)
            throws IOException {
        JsonObject json = config.toJson();
        json.addProperty("torch_dtype", torchDtype);
        AtomicFiles.writeString(directory.resolve(FILE), GSON.toJson(json));
    }

    /**
     * Reads {@code eos_token_id}, which is an integer or, in newer configurations, a list.
     *
     * @param value the JSON value, or null
     * @return the ids
     */
    public static List<Long> tokenIds(JsonElement value) {
        List<Long> ids = new ArrayList<>();
        if (value == null || value.isJsonNull()) {
            return ids;
        }
        if (value.isJsonArray()) {
            value.getAsJsonArray().forEach(id -> ids.add(ConfigValues.tokenId(id)));
        } else {
            ids.add(ConfigValues.tokenId(value));
        }
        return ids;
    }
}
