package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.JsonText;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.nn.Block;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A 4-bit base as transformers' {@code BitsAndBytesConfig} describes it, and as {@code config.json}
 * holds it under {@code quantization_config}: the code, double quantization, the type the
 * dequantized weights compute in, the type the packed bytes are stored as, and the modules left
 * unquantized. What this build cannot honour (8-bit weights, another method, an unknown type) is
 * refused by {@link #fromJson} in one line naming the key.
 */
public final class QuantizationConfig {

    /** The {@code config.json} key of the block. */
    public static final String KEY = "quantization_config";

    /** The element types bitsandbytes may store packed 4-bit bytes as. */
    public static final Set<String> STORAGE_TYPES =
            Set.of("uint8", "int8", "float16", "bfloat16", "float32");

    private final QuantConfig quant;
    private final Precision computeType;
    private final String storageType;
    private final List<String> skipModules;

    private QuantizationConfig(Builder builder) {
        quant =
                QuantConfig.builder()
                        .setQuantType(builder.quantType)
                        .optNested(builder.nested)
                        .build();
        computeType = builder.computeType;
        storageType = builder.storageType;
        skipModules = builder.skipModules;
    }

    /**
     * Returns a builder.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Returns the 4-bit base a model's {@code config.json} describes: a pre-quantized checkpoint's.
     *
     * @param config the whole {@code config.json} object
     * @return its {@code quantization_config}, or null when it has none
     * @throws IllegalArgumentException if the block is not an object or cannot be honoured
     */
    public static QuantizationConfig of(JsonObject config) {
        JsonElement block = config.get(KEY);
        if (block == null || block.isJsonNull()) {
            return null;
        }
        if (!block.isJsonObject()) {
            throw new IllegalArgumentException(
                    "\"" + KEY + "\" is not an object: remove it or fix it");
        }
        return fromJson(block.getAsJsonObject());
    }

    /**
     * Returns the 4-bit base a checkpoint's {@code config.json} describes, as {@link
     * #of(JsonObject)} does.
     *
     * @param checkpoint the checkpoint directory, or its {@code config.json}
     * @return its {@code quantization_config}, or null when it has none
     * @throws IOException if the file cannot be read
     */
    public static QuantizationConfig read(Path checkpoint) throws IOException {
        return of(ConfigJson.readObject(checkpoint));
    }

    /**
     * Reads a {@code quantization_config} block as transformers writes it for bitsandbytes.
     *
     * @param block the block's object
     * @return the configuration
     * @throws IllegalArgumentException naming the first key this build cannot honour
     */
    public static QuantizationConfig fromJson(JsonObject block) {
        String method = string(block, "quant_method", "bitsandbytes");
        if (!"bitsandbytes".equals(method)) {
            throw refused(
                    "quant_method",
                    method,
                    "only bitsandbytes' 4-bit weights load here; use a float checkpoint");
        }
        if (flag(block, "load_in_8bit")) {
            throw refused(
                    "load_in_8bit",
                    "true",
                    "8-bit (LLM.int8) weights are not supported; use a 4-bit or a float"
                            + " checkpoint");
        }
        if (!flag(block, "load_in_4bit")) {
            throw refused(
                    "load_in_4bit",
                    String.valueOf(block.get("load_in_4bit")),
                    "a bitsandbytes block here must describe 4-bit weights");
        }
        Builder builder =
                builder()
                        .setQuantType(
                                quantType(
                                        string(block, "bnb_4bit_quant_type", "fp4"),
                                        KEY + ".bnb_4bit_quant_type"))
                        .optComputeType(
                                computeType(
                                        string(block, "bnb_4bit_compute_dtype", "float32"),
                                        KEY + ".bnb_4bit_compute_dtype"))
                        .optStorageType(
                                storageType(
                                        string(block, "bnb_4bit_quant_storage", "uint8"),
                                        KEY + ".bnb_4bit_quant_storage"))
                        .optNested(flag(block, "bnb_4bit_use_double_quant"));
        JsonElement skip = block.get("llm_int8_skip_modules");
        if (skip != null && !skip.isJsonNull()) {
            List<String> modules = JsonText.strings(skip);
            if (modules == null) {
                throw refused(
                        "llm_int8_skip_modules", skip.toString(), "give a list of module names");
            }
            builder.optSkipModules(modules);
        }
        return builder.build();
    }

    /**
     * Returns the code, its block size (64) and double quantization.
     *
     * @return the quantization of each base weight
     */
    public QuantConfig getQuant() {
        return quant;
    }

    /**
     * Returns the type the dequantized weights and their products compute in ({@code
     * bnb_4bit_compute_dtype}).
     *
     * @return the compute type
     */
    public Precision getComputeType() {
        return computeType;
    }

    /**
     * Returns the element type bitsandbytes stores the packed bytes as ({@code
     * bnb_4bit_quant_storage}): a label only, since the bytes are the same.
     *
     * @return a type name such as {@code uint8}
     */
    public String getStorageType() {
        return storageType;
    }

    /**
     * Returns the element type that labels the packed bytes in a checkpoint ({@link
     * #getStorageType()} as a safetensors type).
     *
     * @return U8, I8, F16, BF16 or F32
     */
    public Dtype getStorageDtype() {
        return switch (storageType) {
            case "int8" -> Dtype.I8;
            case "float16" -> Dtype.F16;
            case "bfloat16" -> Dtype.BF16;
            case "float32" -> Dtype.F32;
            default -> Dtype.U8;
        };
    }

    /**
     * Returns this configuration with another compute type: the type a run's 4-bit layers did
     * compute in, for the block saved with its base.
     *
     * @param type the compute type
     * @return the configuration
     */
    public QuantizationConfig withComputeType(Precision type) {
        Builder builder =
                builder()
                        .setQuantType(quant.getQuantType())
                        .optNested(quant.isNested())
                        .optComputeType(type)
                        .optStorageType(storageType);
        if (skipModules != null) {
            builder.optSkipModules(skipModules);
        }
        return builder.build();
    }

    /**
     * Returns the block transformers writes to {@code config.json} for this {@code
     * BitsAndBytesConfig} (the keys {@link #fromJson} reads, and transformers' defaults for the
     * 8-bit ones), so that a base saved with it loads as it was quantized; but for the private
     * {@code _load_in_4bit} and {@code _load_in_8bit}, the copies of {@code load_in_4bit} and
     * {@code load_in_8bit} that transformers' {@code to_dict} also writes, which are left out.
     *
     * @return the {@code quantization_config} object
     */
    public JsonObject toJson() {
        JsonObject block = new JsonObject();
        block.addProperty("quant_method", "bitsandbytes");
        block.addProperty("load_in_4bit", true);
        block.addProperty("load_in_8bit", false);
        block.addProperty("bnb_4bit_quant_type", quant.getQuantType().getName());
        block.addProperty("bnb_4bit_use_double_quant", quant.isNested());
        block.addProperty("bnb_4bit_compute_dtype", computeType.name().toLowerCase(Locale.ROOT));
        block.addProperty("bnb_4bit_quant_storage", storageType);
        block.addProperty("llm_int8_threshold", 6.0);
        block.addProperty("llm_int8_has_fp16_weight", false);
        block.addProperty("llm_int8_enable_fp32_cpu_offload", false);
        if (skipModules == null) {
            block.add("llm_int8_skip_modules", JsonNull.INSTANCE);
        } else {
            JsonArray modules = new JsonArray();
            skipModules.forEach(modules::add);
            block.add("llm_int8_skip_modules", modules);
        }
        return block;
    }

    /**
     * Returns the modules left unquantized ({@code llm_int8_skip_modules}), or null for
     * transformers' default (the output head).
     *
     * @return the module names, or null
     */
    public List<String> getSkipModules() {
        return skipModules;
    }

    /**
     * Puts this 4-bit base in place of a model's linear projections ({@link Qlora#quantize}), but
     * those in the skip list (transformers' default: the head).
     *
     * @param root the model, without adapters
     * @return the dotted paths of the quantized projections
     * @throws IllegalArgumentException for an encoder-decoder model: transformers keeps T5's {@code
     *     wo} projections in float32 under 4 bits, which this build does not do yet
     */
    public List<String> apply(Block root) {
        if (!(root instanceof CausalLM)) {
            throw new IllegalArgumentException(
                    "A 4-bit base is built for the decoder-only families; "
                            + root.getClass().getSimpleName()
                            + " is not one yet (transformers keeps T5's wo projections in float32"
                            + " under 4 bits): drop --use_4bit_quantization and train LoRA on the"
                            + " float base");
        }
        return Qlora.quantize(root, quant, skipModules == null ? Qlora.DEFAULT_SKIP : skipModules);
    }

    /**
     * Describes the configuration in a few words, for a log line.
     *
     * @return such as {@code nf4, double quantization, compute bfloat16, stored as uint8}
     */
    public String describe() {
        return quant.getQuantType().getName()
                + (quant.isNested() ? ", double quantization" : "")
                + ", compute "
                + computeType.name().toLowerCase(Locale.ROOT)
                + ", stored as "
                + storageType;
    }

    /**
     * Reads a 4-bit code's name.
     *
     * @param name {@code nf4} or {@code fp4}
     * @param source the key or flag it came from, for the error
     * @return the code
     * @throws IllegalArgumentException naming the source
     */
    public static QuantType quantType(String name, String source) {
        try {
            return QuantType.of(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + " " + name + ": use nf4 or fp4", e);
        }
    }

    /**
     * Reads a compute type's name ({@code torch.} prefix allowed).
     *
     * @param name {@code float32}, {@code bfloat16} or {@code float16}
     * @param source the key or flag it came from, for the error
     * @return the precision
     * @throws IllegalArgumentException naming the source
     */
    public static Precision computeType(String name, String source) {
        String type = torchName(name);
        if (!Set.of("float32", "bfloat16", "float16").contains(type)) {
            throw new IllegalArgumentException(
                    source + " " + name + ": use float32, bfloat16 or float16");
        }
        return Precision.of(type);
    }

    /**
     * Reads a storage type's name ({@code torch.} prefix allowed).
     *
     * @param name one of {@link #STORAGE_TYPES}
     * @param source the key or flag it came from, for the error
     * @return the type's name without prefix
     * @throws IllegalArgumentException naming the source
     */
    public static String storageType(String name, String source) {
        String type = torchName(name);
        if (!STORAGE_TYPES.contains(type)) {
            throw new IllegalArgumentException(
                    source + " " + name + ": use one of " + STORAGE_TYPES);
        }
        return type;
    }

    private static IllegalArgumentException refused(String key, String value, String fix) {
        return new IllegalArgumentException(KEY + "." + key + " " + value + ": " + fix);
    }

    private static String string(JsonObject block, String key, String fallback) {
        JsonElement value = block.get(key);
        if (value == null || value.isJsonNull()) {
            return fallback;
        }
        if (!(value instanceof JsonPrimitive p && p.isString())) {
            throw refused(key, value.toString(), "give a string");
        }
        return value.getAsString();
    }

    private static boolean flag(JsonObject block, String key) {
        JsonElement value = block.get(key);
        if (value == null || value.isJsonNull()) {
            return false;
        }
        if (!(value instanceof JsonPrimitive p && p.isBoolean())) {
            throw refused(key, value.toString(), "give true or false");
        }
        return value.getAsBoolean();
    }

    /** {@code torch.bfloat16} and {@code bfloat16} alike, as transformers accepts both. */
    private static String torchName(String name) {
        String lower = name.trim().toLowerCase(Locale.ROOT);
        return lower.startsWith("torch.") ? lower.substring("torch.".length()) : lower;
    }

    /** Builds a {@link QuantizationConfig}. */
    public static final class Builder {

        private QuantType quantType;
        private boolean nested;
        private Precision computeType = Precision.FLOAT32;
        private String storageType = "uint8";
        private List<String> skipModules;

        private Builder() {}

        /**
         * Sets the 4-bit code (required).
         *
         * @param quantType NF4 or FP4
         * @return this builder
         */
        public Builder setQuantType(QuantType quantType) {
            this.quantType = quantType;
            return this;
        }

        /**
         * Sets whether the block scales are quantized again (default false).
         *
         * @param nested true for double quantization
         * @return this builder
         */
        public Builder optNested(boolean nested) {
            this.nested = nested;
            return this;
        }

        /**
         * Sets the type the dequantized weights compute in (default float32, as transformers).
         *
         * @param computeType the compute type
         * @return this builder
         */
        public Builder optComputeType(Precision computeType) {
            this.computeType = computeType;
            return this;
        }

        /**
         * Sets the element type the packed bytes are stored as (default {@code uint8}).
         *
         * @param storageType one of {@link #STORAGE_TYPES}
         * @return this builder
         */
        public Builder optStorageType(String storageType) {
            this.storageType = storageType;
            return this;
        }

        /**
         * Sets the modules left unquantized (default: the output head).
         *
         * @param skipModules module names, matched as transformers matches {@code
         *     llm_int8_skip_modules}: a module's own name, its dotted path, or an ancestor's (see
         *     {@link Qlora#quantize})
         * @return this builder
         */
        public Builder optSkipModules(List<String> skipModules) {
            this.skipModules = List.copyOf(skipModules);
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException if the code is missing or the storage type unknown
         */
        public QuantizationConfig build() {
            if (!STORAGE_TYPES.contains(storageType)) {
                throw new IllegalArgumentException(
                        "4-bit storage type " + storageType + " is not one of " + STORAGE_TYPES);
            }
            return new QuantizationConfig(this);
        }
    }
}
