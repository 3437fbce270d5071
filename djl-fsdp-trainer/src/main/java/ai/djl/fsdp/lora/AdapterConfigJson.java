package ai.djl.fsdp.lora;

import ai.djl.fsdp.safetensors.JsonText;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * PEFT's {@code adapter_config.json} for a {@link LoraConfig}: the object written beside the
 * adapters, and the reading of one, which refuses in one line naming the key whatever PEFT would
 * adapt, scale or compute otherwise than this build does.
 */
final class AdapterConfigJson {

    /**
     * PEFT's settings that change which modules are adapted or what they compute, each with what to
     * do instead: refused unless absent, null or empty.
     */
    private static final String[][] UNSUPPORTED = {
        {"rank_pattern", "a rank per module: retrain with one r for every module"},
        {"alpha_pattern", "a lora_alpha per module: retrain with one lora_alpha for every module"},
        {
            "layers_to_transform",
            "adapters on some layers only: retrain with target_modules naming those layers'"
                    + " modules by path (model.layers.0.self_attn.q_proj)"
        },
        {
            "layers_pattern",
            "adapters on some layers only: retrain with target_modules naming those layers'"
                    + " modules by path"
        },
        {
            "exclude_modules",
            "targets left out by name: retrain with target_modules that leave those modules out"
        },
        {"layer_replication", "layers repeated: retrain without layer_replication"},
        {"target_parameters", "adapters on parameters: retrain with target_modules"},
        {"trainable_token_indices", "trained token rows: retrain with modules_to_save"}
    };

    private AdapterConfigJson() {}

    /**
     * Returns the configuration as PEFT writes it. As PEFT does, {@code target_modules} holds the
     * targets as configured, except {@code all-linear}, which becomes the names it resolved to (the
     * last component of each adapted module's path, sorted).
     *
     * <p>{@code modules_to_save} lists {@code savedModules}: the saved modules PEFT can wrap (those
     * that share no parameter with another module, whose copy PEFT's wrapper would untie).
     */
    static JsonObject write(
            LoraConfig config,
            Collection<String> adaptedModules,
            boolean fanInFanOut,
            Collection<String> savedModules) {
        JsonObject json = new JsonObject();
        json.addProperty("peft_type", "LORA");
        json.addProperty("task_type", config.getTaskType());
        json.addProperty("base_model_name_or_path", config.getBaseModelNameOrPath());
        json.addProperty("r", config.getRank());
        json.addProperty("lora_alpha", config.getAlpha());
        json.addProperty("lora_dropout", config.getDropout());
        JsonArray targets = new JsonArray();
        Collection<String> names =
                config.targetsAllLinear()
                        ? adaptedModules.stream()
                                .map(path -> path.substring(path.lastIndexOf('.') + 1))
                                .collect(Collectors.toCollection(TreeSet::new))
                        : new LinkedHashSet<>(config.getTargetModules());
        names.forEach(targets::add);
        json.add("target_modules", targets);
        if (!savedModules.isEmpty()) {
            JsonArray saved = new JsonArray();
            savedModules.forEach(saved::add);
            json.add("modules_to_save", saved);
        }
        json.addProperty("fan_in_fan_out", fanInFanOut);
        json.addProperty("bias", "none");
        json.addProperty("use_rslora", false);
        json.addProperty("inference_mode", true);
        return json;
    }

    /**
     * Reads an {@code adapter_config.json} file.
     *
     * @throws IllegalArgumentException naming the file and the key, if it is not JSON or not a
     *     plain LoRA configuration this build computes as PEFT does
     */
    static LoraConfig read(Path file) throws IOException {
        JsonElement json;
        try {
            json = JsonText.parse(Files.readString(file), false);
        } catch (JsonParseException e) {
            throw refusal(file + " is not valid JSON: " + JsonText.describe(e), e);
        }
        if (!json.isJsonObject()) {
            throw new IllegalArgumentException(
                    file + " holds " + json + ", not a JSON object: is it PEFT's adapter config?");
        }
        try {
            return read(json.getAsJsonObject());
        } catch (IllegalArgumentException e) {
            throw refusal(file + ": " + e.getMessage(), e);
        }
    }

    /** Reads the object; a refusal names the key, not the file. */
    static LoraConfig read(JsonObject json) {
        String type = string(json, "peft_type", "LORA");
        if (!"LORA".equals(type.toUpperCase(Locale.ROOT))) {
            throw refused("peft_type", json, "only LoRA adapters load here");
        }
        for (String flag : new String[] {"use_rslora", "use_dora", "lora_bias"}) {
            if (flag(json, flag)) {
                throw refused(flag, json, "not supported: retrain with " + flag + " false");
            }
        }
        if (!"none".equals(string(json, "bias", "none"))) {
            throw refused("bias", json, "only \"none\" is supported: retrain with bias \"none\"");
        }
        for (String[] unsupported : UNSUPPORTED) {
            JsonElement value = json.get(unsupported[0]);
            // An empty layers_to_transform is set all the same: PEFT then adapts no layer.
            boolean set =
                    "layers_to_transform".equals(unsupported[0])
                            ? value != null && !value.isJsonNull()
                            : !isEmpty(value);
            if (set) {
                throw refused(unsupported[0], json, "not supported (" + unsupported[1] + ")");
            }
        }
        LoraConfig.Builder builder = LoraConfig.builder().setTargetModules(targets(json));
        // PEFT's defaults where a key is absent: r 8, lora_alpha 8, lora_dropout 0.
        builder.optRank((int) number(json, "r", 8, true));
        builder.optAlpha((float) number(json, "lora_alpha", 8, false));
        builder.optDropout((float) number(json, "lora_dropout", 0, false));
        if (!isEmpty(json.get("modules_to_save"))) {
            builder.optModulesToSave(names(json, "modules_to_save", "give a list of module names"));
        }
        builder.optTaskType(string(json, "task_type", "CAUSAL_LM"));
        String base = string(json, "base_model_name_or_path", null);
        if (base != null) {
            builder.optBaseModelNameOrPath(base);
        }
        return builder.build();
    }

    /**
     * The targets: a list of names, or {@code all-linear}. Any other string PEFT matches as a
     * regular expression against each module's whole path, which is refused.
     */
    private static List<String> targets(JsonObject json) {
        JsonElement targets = json.get("target_modules");
        if (targets == null || targets.isJsonNull()) {
            throw new IllegalArgumentException(
                    "target_modules is missing: PEFT's adapter config names the adapted modules");
        }
        if (targets instanceof JsonPrimitive p && p.isString()) {
            if (!LoraConfig.ALL_LINEAR.equals(p.getAsString())) {
                throw refused(
                        "target_modules",
                        json,
                        "PEFT matches a string as a regular expression against each module's"
                                + " whole path, which is not supported: give a list of names,"
                                + " such as [\"q_proj\", \"v_proj\"], or \""
                                + LoraConfig.ALL_LINEAR
                                + "\"");
            }
            return List.of(LoraConfig.ALL_LINEAR);
        }
        return names(json, "target_modules", "give a list of module names");
    }

    private static List<String> names(JsonObject json, String key, String fix) {
        List<String> names = JsonText.strings(json.get(key));
        if (names == null) {
            throw refused(key, json, fix);
        }
        return names;
    }

    private static double number(JsonObject json, String key, double fallback, boolean integer) {
        JsonElement value = json.get(key);
        if (value == null || value.isJsonNull()) {
            return fallback;
        }
        if (!(value instanceof JsonPrimitive p && p.isNumber())
                || integer
                        && (value.getAsDouble() != Math.rint(value.getAsDouble())
                                || Math.abs(value.getAsDouble()) > Integer.MAX_VALUE)) {
            throw refused(key, json, integer ? "give an integer" : "give a number");
        }
        return value.getAsDouble();
    }

    private static String string(JsonObject json, String key, String fallback) {
        JsonElement value = json.get(key);
        if (value == null || value.isJsonNull()) {
            return fallback;
        }
        if (!(value instanceof JsonPrimitive p && p.isString())) {
            throw refused(key, json, "give a string");
        }
        return value.getAsString();
    }

    private static boolean flag(JsonObject json, String key) {
        JsonElement value = json.get(key);
        if (value == null || value.isJsonNull()) {
            return false;
        }
        if (!(value instanceof JsonPrimitive p && p.isBoolean())) {
            throw refused(key, json, "give true or false");
        }
        return value.getAsBoolean();
    }

    /** Absent, null, false, or an empty string, list or object: PEFT's "not set". */
    private static boolean isEmpty(JsonElement value) {
        if (value == null || value.isJsonNull()) {
            return true;
        }
        if (value.isJsonArray()) {
            return value.getAsJsonArray().isEmpty();
        }
        if (value.isJsonObject()) {
            return value.getAsJsonObject().isEmpty();
        }
        return value.getAsJsonPrimitive().isString() && value.getAsString().isEmpty();
    }

    private static IllegalArgumentException refused(String key, JsonObject json, String why) {
        return new IllegalArgumentException(key + " " + json.get(key) + ": " + why);
    }

    private static IllegalArgumentException refusal(String message, Exception underlying) {
        IllegalArgumentException e = new IllegalArgumentException(message);
        e.addSuppressed(underlying);
        return e;
    }
}
