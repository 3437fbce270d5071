package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.safetensors.AtomicFiles;
import ai.djl.fsdp.safetensors.JsonText;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.ModelFamily;
import com.google.gson.FieldNamingPolicy;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
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
 * key is an error naming it. Which class a file binds to is the registry's choice ({@code
 * ai.djl.fsdp.zoo.models.ModelFamilies}), by {@code model_type}.
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

    private static final String FIX =
            ": pass a Hugging Face model directory whose config.json is intact";

    private ConfigJson() {}

    /**
     * Reads a {@code config.json} as a JSON object.
     *
     * @param path a {@code config.json}, or the model directory holding it
     * @return the object
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException if it is not UTF-8 JSON holding an object
     */
    public static JsonObject readObject(Path path) throws IOException {
        Path file = file(path);
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
        return root.getAsJsonObject();
    }

    /**
     * Returns the {@code config.json} a path names.
     *
     * @param path a {@code config.json}, or the model directory holding it
     * @return the file
     */
    public static Path file(Path path) {
        return Files.isDirectory(path) ? path.resolve(FILE) : path;
    }

    /**
     * Binds a configuration object to a class after checking that the required keys are present and
     * that every key the class has a field for holds a value of the field's type: an {@code int}
     * field is a size and must be a positive integer that fits in an int, a {@code long} a
     * non-negative integer, a {@code float} or {@code double} a finite number, a {@code boolean} or
     * {@code String} one of those.
     *
     * @param json the configuration object
     * @param type the configuration class, whose fields (its own and its superclasses') are the
     *     snake_case keys in camelCase
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
        for (Class<?> c = type; c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                String key = FieldNamingPolicy.LOWER_CASE_WITH_UNDERSCORES.translateName(field);
                JsonElement value = json.get(key);
                if (!Modifier.isStatic(field.getModifiers())
                        && !Modifier.isTransient(field.getModifiers())
                        && value != null
                        && !value.isJsonNull()) {
                    ConfigValues.check(key, value, field.getType());
                }
            }
        }
        return GSON.fromJson(json, type);
    }

    /**
     * Serializes a configuration object's fields with snake_case keys, with its family's {@code
     * model_type} and {@code architectures}.
     *
     * @param config the configuration
     * @param family its family
     * @return the JSON object
     */
    public static JsonObject toJson(Object config, ModelFamily family) {
        JsonObject json = GSON.toJsonTree(config).getAsJsonObject();
        json.addProperty("model_type", family.modelType());
        JsonArray architectures = new JsonArray();
        architectures.add(family.architecture());
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
        write(config, directory, torchDtype, null);
    }

    /**
     * Writes a configuration as {@code config.json} with the {@code torch_dtype} its floating
     * weights are stored in and, for a base saved in 4 bits, the {@code quantization_config} block
     * it loads with, as transformers' {@code save_pretrained} records them.
     *
     * @param config the configuration
     * @param directory the checkpoint directory
     * @param torchDtype {@code float32}, {@code bfloat16} or {@code float16}
     * @param quantization the 4-bit base's settings, or null for a float checkpoint
     * @throws IOException if writing fails
     */
    public static void write(
            ModelConfig config, Path directory, String torchDtype, QuantizationConfig quantization)
            throws IOException {
        JsonObject json = config.toJson();
        json.addProperty("torch_dtype", torchDtype);
        if (quantization != null) {
            json.add(QuantizationConfig.KEY, quantization.toJson());
        }
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
