package ai.djl.fsdp.zoo.models;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.ModelFamily;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.mistral.MistralConfig;
import ai.djl.fsdp.zoo.qwen2.Qwen2Config;
import ai.djl.fsdp.zoo.qwen3.Qwen3Config;
import ai.djl.fsdp.zoo.t5.T5Config;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Entry points of the zoo: built-in tiny architectures by name, and models from Hugging Face
 * checkpoint directories of any family {@link ModelFamilies} lists. (Until the families had a
 * registry this class lived in {@code ai.djl.fsdp.zoo}; it moved here because it builds every
 * family, which all build on that package: there it closed an import loop.)
 *
 * <pre>{@code
 * CausalLM fresh = Models.create(Models.builtin("gpt2-tiny"), manager);
 * CausalLM loaded = Models.load(Path.of("checkpoints/gpt2"), manager);
 * }</pre>
 */
public final class Models {

    /**
     * Small architectures with GPT-2's 50,257-token vocabulary, for tests and training from
     * scratch: {@code gpt2-tiny} and {@code llama-tiny}, 2 layers, width 64, 4 heads, 256 positions
     * (Llama: 2 key-value heads); {@code gpt2-mini}, 2 layers, width 192, 6 heads, 256 positions,
     * without dropout: the README's main job, which learns its arithmetic chat in a few minutes on
     * two cores. {@code mistral-tiny}, {@code qwen2-tiny} and {@code qwen3-tiny} are {@code
     * llama-tiny} with each family's features: a sliding window of 64 positions; biases on the
     * query, key and value projections and a tied head; query and key norms, with heads of 32 (more
     * than width / heads) and a tied head.
     */
    private static final Map<String, Supplier<ModelConfig>> BUILTIN =
            Map.of(
                    "gpt2-tiny",
                    () -> GPT2Config.of(2, 64, 4, 256),
                    "gpt2-mini",
                    () -> withoutDropout(GPT2Config.of(2, 192, 6, 256)),
                    "llama-tiny",
                    () -> LlamaConfig.of(2, 64, 4, 2, 128, 256),
                    "mistral-tiny",
                    () ->
                            llamaTiny(
                                    MistralConfig.FAMILY,
                                    json -> json.addProperty("sliding_window", 64)),
                    "qwen2-tiny",
                    () ->
                            llamaTiny(
                                    Qwen2Config.FAMILY,
                                    json -> json.addProperty("tie_word_embeddings", true)),
                    "t5-tiny",
                    () -> T5Config.of(256, 64, 4, 256, 2, 2, "relu"),
                    "qwen3-tiny",
                    () ->
                            llamaTiny(
                                    Qwen3Config.FAMILY,
                                    json -> {
                                        json.addProperty("head_dim", 32);
                                        json.addProperty("tie_word_embeddings", true);
                                    }));

    private Models() {}

    /** {@code llama-tiny} as another family built on Llama's block, with keys of its own. */
    private static ModelConfig llamaTiny(ModelFamily family, Consumer<JsonObject> keys) {
        JsonObject json = LlamaConfig.of(2, 64, 4, 2, 128, 256).toJson();
        json.addProperty("model_type", family.modelType());
        keys.accept(json);
        return family.parse(json);
    }

    /** A GPT-2 configuration with its three dropout probabilities set to 0. */
    private static ModelConfig withoutDropout(GPT2Config config) {
        JsonObject json = config.toJson();
        for (String key : new String[] {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) {
            json.addProperty(key, 0.0);
        }
        return GPT2Config.fromJson(json);
    }

    /**
     * Returns a built-in configuration.
     *
     * @param name one of {@link #builtinNames()}
     * @return the configuration
     * @throws IllegalArgumentException for an unknown name
     */
    public static ModelConfig builtin(String name) {
        Supplier<ModelConfig> config = BUILTIN.get(name);
        if (config == null) {
            throw new IllegalArgumentException(
                    "no built-in model " + name + "; built-in: " + BUILTIN.keySet());
        }
        return config.get();
    }

    /**
     * Returns the names of the built-in configurations, sorted.
     *
     * @return the names
     */
    public static Set<String> builtinNames() {
        return new TreeSet<>(BUILTIN.keySet());
    }

    /**
     * Returns whether {@code name} is a built-in configuration.
     *
     * @param name a name
     * @return true for one of {@link #builtinNames()}
     */
    public static boolean isBuiltin(String name) {
        return BUILTIN.containsKey(name);
    }

    /**
     * Builds a model and initializes its parameters as Hugging Face initializes a fresh model.
     *
     * @param config the configuration
     * @param manager the manager that owns the parameters
     * @return the initialized model
     * @throws IllegalArgumentException for an encoder-decoder configuration (see {@link
     *     #createPretrained})
     */
    public static CausalLM create(ModelConfig config, NDManager manager) {
        return initialized(config.newCausalLM(), manager);
    }

    /**
     * Builds a model of any family, decoder-only or encoder-decoder, and initializes its parameters
     * as Hugging Face initializes a fresh model.
     *
     * @param config the configuration
     * @param manager the manager that owns the parameters
     * @return the initialized model
     */
    public static PretrainedModel createPretrained(ModelConfig config, NDManager manager) {
        return initialized(config.newModel(), manager);
    }

    private static <M extends PretrainedModel> M initialized(M model, NDManager manager) {
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
        return model;
    }

    /**
     * Builds a model to be filled from a checkpoint, not initialized: initializing it (best through
     * {@code FsdpTrainer.initialize}, one unit at a time) gives its parameters their shapes and
     * memory but no values, so the memory costs nothing until something fills it. This is the model
     * FSDP shards straight from a checkpoint ({@code HfCheckpoint.shardSource}), each rank reading
     * only its shards; its values must not be read before that. Adapters added afterwards (LoRA)
     * keep their own initializers.
     *
     * @param config the configuration
     * @return the model, not initialized
     * @throws IllegalArgumentException for an encoder-decoder configuration
     */
    public static CausalLM forCheckpoint(ModelConfig config) {
        config.requireDecoderOnly();
        return (CausalLM) forAnyCheckpoint(config);
    }

    /**
     * Builds a model of any family, decoder-only or encoder-decoder, to be filled from a
     * checkpoint, not initialized, as {@link #forCheckpoint} does.
     *
     * @param config the configuration
     * @return the model, not initialized
     */
    public static PretrainedModel forAnyCheckpoint(ModelConfig config) {
        PretrainedModel model = config.newModel();
        model.setInitializer((m, shape, dataType) -> m.create(shape, dataType), p -> true);
        return model;
    }

    /**
     * Loads a Hugging Face checkpoint directory ({@code config.json} and safetensors weights).
     *
     * @param directory the checkpoint directory
     * @param manager the manager that owns the parameters
     * @return the model with the checkpoint's weights
     * @throws IOException if reading fails
     * @throws IllegalArgumentException for an encoder-decoder checkpoint (see {@link
     *     #loadPretrained})
     */
    public static CausalLM load(Path directory, NDManager manager) throws IOException {
        CausalLM model = create(ModelFamilies.read(directory), manager);
        HfCheckpoint.load(model, directory);
        return model;
    }

    /**
     * Loads a Hugging Face checkpoint directory of any family, decoder-only or encoder-decoder.
     *
     * @param directory the checkpoint directory
     * @param manager the manager that owns the parameters
     * @return the model with the checkpoint's weights
     * @throws IOException if reading fails
     */
    public static PretrainedModel loadPretrained(Path directory, NDManager manager)
            throws IOException {
        PretrainedModel model = createPretrained(ModelFamilies.read(directory), manager);
        HfCheckpoint.load(model, directory);
        return model;
    }

    /**
     * Loads a Hugging Face checkpoint directory of any family, decoder-only or encoder-decoder,
     * with its vocabulary grown as {@code resize} says: the stored rows of the token embedding and
     * an untied head as stored, the added rows drawn.
     *
     * @param directory the checkpoint directory
     * @param manager the manager that owns the parameters
     * @param resize how the checkpoint's vocabulary grows
     * @return the model of the grown vocabulary
     * @throws IOException if reading fails
     */
    public static PretrainedModel loadPretrained(
            Path directory, NDManager manager, VocabularyResize resize) throws IOException {
        PretrainedModel model =
                createPretrained(
                        ModelFamilies.withVocabSize(
                                ModelFamilies.read(directory), resize.getRows()),
                        manager);
        HfCheckpoint.load(model, directory, resize);
        return model;
    }
}
