package ai.djl.fsdp.lora;

import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.fsdp.safetensors.AtomicFiles;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import com.google.gson.GsonBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * LoRA on any Block tree: insert adapters around targeted projections, count what trains, merge
 * adapters into the base weights, and save or load them in PEFT's layout ({@code
 * adapter_config.json} and {@code adapter_model.safetensors} keyed {@code
 * base_model.model.<module>.lora_A.weight}), so adapters move between this project and PEFT.
 *
 * <p>The targeted projections must be {@link LinearProjection}s; adapters are put in their place
 * with {@link BlockChildren}, as FSDP puts its units.
 */
public final class Lora {

    /** The adapter configuration file of a PEFT adapter directory. */
    public static final String CONFIG_FILE = "adapter_config.json";

    /** The adapter weights file of a PEFT adapter directory. */
    public static final String WEIGHTS_FILE = "adapter_model.safetensors";

    /** The prefix PEFT gives every key: its wrapper's path to the base model. */
    public static final String PEFT_PREFIX = "base_model.model.";

    /** The child of a {@link LoraLinear} that holds the adapted projection (PEFT's name). */
    static final String BASE_LAYER = "base_layer";

    /** The output head, which {@code all-linear} leaves alone, as PEFT does. */
    private static final String OUTPUT_HEAD = "lm_head";

    private Lora() {}

    /**
     * Wraps every targeted projection in a {@link LoraLinear} and freezes every parameter but the
     * adapters'. In an initialized model the adapters are initialized next to the base weights; in
     * a model not yet initialized they are initialized with it (through {@code
     * FsdpTrainer.initialize}, one unit at a time, adapters included), each with its own
     * initializer ({@code A} Kaiming-uniform, {@code B} zero). An initializer given to the training
     * config ({@code DefaultTrainingConfig.optInitializer}) is applied to the matching parameters
     * when the trainer is made, as DJL does, and so replaces the adapters' own for those: give the
     * config none, or add the adapters to an initialized model.
     *
     * @param root the model, initialized or not
     * @param config the adaptation
     * @return the dotted paths of the adapted modules
     * @throws IllegalArgumentException if no module matches the targets
     * @throws IllegalStateException if the model already has adapters, or a targeted module's
     *     parent cannot swap children
     */
    public static List<String> apply(Block root, LoraConfig config) {
        Map<String, Block> modules = StateDict.modules(root);
        if (!adapters(root).isEmpty()) {
            throw new IllegalStateException(
                    "the model already has LoRA adapters: merge them first");
        }
        List<String> adapted = new ArrayList<>();
        for (Map.Entry<String, Block> entry : modules.entrySet()) {
            String path = entry.getKey();
            if (!(entry.getValue() instanceof LinearProjection projection)
                    || !(config.targetsAllLinear()
                            ? !path.equals(OUTPUT_HEAD)
                            : config.targets(path))) {
                continue;
            }
            Parameter weight = projection.getParameters().get("weight");
            LoraLinear lora = new LoraLinear(projection, config);
            if (weight != null && weight.isInitialized()) {
                NDArray w = weight.getArray();
                // Adapters of a 4-bit base (its weight holds packed codes) train in float32.
                DataType type = w.getDataType().isInteger() ? DataType.FLOAT32 : w.getDataType();
                lora.initialize(w.getManager(), type, new Shape(1, projection.inFeatures()));
            }
            BlockChildren.replace(parent(modules, path), projection, lora);
            adapted.add(path);
        }
        if (adapted.isEmpty()) {
            throw new IllegalArgumentException(
                    "no module matches LoRA target_modules "
                            + config.getTargetModules()
                            + "; this model's projections are "
                            + projectionNames(modules));
        }
        Set<Parameter> trainable = Collections.newSetFromMap(new IdentityHashMap<>());
        for (LoraLinear lora : adapters(root).values()) {
            trainable.add(lora.getLoraA());
            trainable.add(lora.getLoraB());
        }
        trainable.addAll(ModulesToSave.parameters(root, config).values());
        for (Parameter parameter : StateDict.parameters(root).values()) {
            parameter.freeze(!trainable.contains(parameter));
        }
        return adapted;
    }

    /**
     * Returns the adapters of a tree by the dotted path of the module they adapt.
     *
     * @param root the model
     * @return the adapters, in tree order
     */
    public static Map<String, LoraLinear> adapters(Block root) {
        Map<String, LoraLinear> adapters = new LinkedHashMap<>();
        StateDict.modules(root)
                .forEach(
                        (path, block) -> {
                            if (block instanceof LoraLinear lora) {
                                adapters.put(path, lora);
                            }
                        });
        return adapters;
    }

    /**
     * Adds every adapter's update into its base weight and puts the base projection back in its
     * place, leaving a plain model that computes what the adapted one did and has the original
     * parameter names (ready to save as an ordinary checkpoint). Every parameter is trainable again
     * afterwards.
     *
     * @param root the adapted model
     * @return the dotted paths of the merged modules
     */
    public static List<String> merge(Block root) {
        Map<String, Block> modules = StateDict.modules(root);
        Map<String, LoraLinear> adapters = adapters(root);
        for (Map.Entry<String, LoraLinear> entry : adapters.entrySet()) {
            LoraLinear lora = entry.getValue();
            lora.mergeIntoBase();
            BlockChildren.replace(parent(modules, entry.getKey()), lora, lora.getBase());
            lora.getLoraA().close();
            lora.getLoraB().close();
        }
        for (Parameter parameter : StateDict.parameters(root).values()) {
            parameter.freeze(false);
        }
        return new ArrayList<>(adapters.keySet());
    }

    /**
     * Returns the parameters the model will have once its adapters are merged, by the names they
     * will have then (an adapted projection's {@code base_layer.} dropped, the adapters gone), in
     * state-dict order. The model itself is not changed.
     *
     * @param root the model, adapted or not
     * @return the merged model's parameters by name
     */
    public static Map<String, Parameter> mergedParameters(Block root) {
        Set<Parameter> adapterWeights = Collections.newSetFromMap(new IdentityHashMap<>());
        Map<String, String> basePrefixes = new LinkedHashMap<>();
        adapters(root)
                .forEach(
                        (path, lora) -> {
                            adapterWeights.add(lora.getLoraA());
                            adapterWeights.add(lora.getLoraB());
                            basePrefixes.put(path + "." + BASE_LAYER + ".", path + ".");
                        });
        Map<String, Parameter> merged = new LinkedHashMap<>();
        StateDict.parameters(root)
                .forEach(
                        (name, parameter) -> {
                            if (!adapterWeights.contains(parameter)) {
                                merged.put(mergedName(name, basePrefixes), parameter);
                            }
                        });
        return merged;
    }

    private static String mergedName(String name, Map<String, String> basePrefixes) {
        for (Map.Entry<String, String> prefix : basePrefixes.entrySet()) {
            if (name.startsWith(prefix.getKey())) {
                return prefix.getValue() + name.substring(prefix.getKey().length());
            }
        }
        return name;
    }

    /**
     * Counts trainable and total parameters (a tied parameter counts once).
     *
     * @param root the model
     * @return the counts; {@code toString()} prints PEFT's one-line summary
     */
    public static ParameterCount count(Block root) {
        long trainable = 0;
        long all = 0;
        for (Parameter parameter : StateDict.parameters(root).values()) {
            long size = parameter.getShape().size();
            all += size;
            if (parameter.requiresGradient()) {
                trainable += size;
            }
        }
        return new ParameterCount(trainable, all);
    }

    /**
     * Saves the adapters in PEFT's layout: {@code adapter_config.json} and {@code
     * adapter_model.safetensors}, each written atomically.
     *
     * @param root the adapted model
     * @param config the configuration the adapters were made with
     * @param directory the adapter directory (created if needed)
     * @throws IOException if writing fails
     */
    public static void save(Block root, LoraConfig config, Path directory) throws IOException {
        SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
        savedParameters(root, config)
                .forEach((key, parameter) -> writer.add(key, parameter.getArray()));
        saveConfig(root, config, directory);
        writer.write(directory.resolve(WEIGHTS_FILE));
    }

    /**
     * Returns what an adapter directory holds, by PEFT's keys: each adapter's {@code
     * base_model.model.<module>.lora_A.weight} and {@code lora_B.weight}, then each parameter of
     * the modules saved with them ({@link LoraConfig#getModulesToSave()}) under {@code
     * base_model.model.<parameter>}, as PEFT saves {@code modules_to_save} and resized embedding
     * layers (a parameter two modules share once, under its first name).
     *
     * @param root the adapted model
     * @param config the configuration the adapters were made with
     * @return the parameters by key, in tree order
     * @throws IllegalStateException if the model has no adapters
     */
    public static Map<String, Parameter> savedParameters(Block root, LoraConfig config) {
        Map<String, Parameter> saved = new LinkedHashMap<>();
        savedAdapters(root)
                .forEach(
                        (path, lora) -> {
                            saved.put(PEFT_PREFIX + path + ".lora_A.weight", lora.getLoraA());
                            saved.put(PEFT_PREFIX + path + ".lora_B.weight", lora.getLoraB());
                        });
        ModulesToSave.parameters(root, config)
                .forEach((name, parameter) -> saved.put(PEFT_PREFIX + name, parameter));
        return saved;
    }

    /**
     * Writes the adapter configuration file of a PEFT adapter directory (the weights are written by
     * {@link #save(Block, LoraConfig, Path)}, or unit by unit under FSDP with {@link
     * LoraState#adapters}).
     *
     * @param root the adapted model
     * @param config the configuration the adapters were made with
     * @param directory the adapter directory (created if needed)
     * @throws IOException if writing fails
     */
    public static void saveConfig(Block root, LoraConfig config, Path directory)
            throws IOException {
        Map<String, LoraLinear> adapters = savedAdapters(root);
        boolean fanInFanOut =
                adapters.values().stream().anyMatch(lora -> lora.getBase().fanInFanOut());
        Files.createDirectories(directory);
        AtomicFiles.writeString(
                directory.resolve(CONFIG_FILE),
                new GsonBuilder()
                        .setPrettyPrinting()
                        .create()
                        .toJson(
                                AdapterConfigJson.write(
                                        config,
                                        adapters.keySet(),
                                        fanInFanOut,
                                        ModulesToSave.wrappable(root, config))));
    }

    static Map<String, LoraLinear> savedAdapters(Block root) {
        Map<String, LoraLinear> adapters = adapters(root);
        if (adapters.isEmpty()) {
            throw new IllegalStateException("the model has no LoRA adapters to save");
        }
        return adapters;
    }

    /**
     * Reads the adapters' configuration, PEFT's {@code adapter_config.json} in {@code directory},
     * with PEFT's defaults for what it leaves out ({@code r} 8, {@code lora_alpha} 8, {@code
     * lora_dropout} 0). What PEFT would adapt, scale or compute otherwise than this build is
     * refused: {@code rank_pattern}, {@code alpha_pattern}, {@code layers_to_transform}, {@code
     * layers_pattern}, {@code exclude_modules} (and PEFT's other per-layer or per-token settings)
     * when set, {@code use_rslora}, {@code use_dora} or {@code lora_bias} true, a {@code bias}
     * other than {@code none}, and a {@code target_modules} string other than {@code all-linear}
     * (PEFT matches it as a regular expression).
     *
     * @param directory the adapter directory
     * @return the configuration
     * @throws IOException if reading fails
     * @throws IllegalArgumentException naming the file and the key, if the file is not JSON, a key
     *     holds a value of the wrong type, or the configuration is refused
     */
    public static LoraConfig readConfig(Path directory) throws IOException {
        return AdapterConfigJson.read(directory.resolve(CONFIG_FILE));
    }

    /**
     * Adds the adapters saved in a PEFT adapter directory to a model: applies its configuration and
     * copies in the adapter weights.
     *
     * @param root an initialized model without adapters
     * @param directory the adapter directory
     * @return the configuration that was read
     * @throws IOException if reading fails
     * @throws IllegalArgumentException if the adapters do not fit the model (missing or unexpected
     *     keys, wrong shapes)
     */
    public static LoraConfig load(Block root, Path directory) throws IOException {
        LoraConfig config = readConfig(directory);
        apply(root, config);
        try (AdapterSource source = AdapterSource.open(root, directory)) {
            for (Map.Entry<Parameter, String> entry : source.keys().entrySet()) {
                Parameter parameter = entry.getKey();
                NDManager manager = parameter.getArray().getManager();
                try (NDArray flat =
                                source.read(manager, parameter, 0, parameter.getShape().size());
                        NDArray value = flat.reshape(parameter.getShape())) {
                    StateDict.copyInto(entry.getValue(), parameter, value);
                }
            }
        }
        return config;
    }

    private static Block parent(Map<String, Block> modules, String path) {
        int dot = path.lastIndexOf('.');
        return modules.get(dot < 0 ? "" : path.substring(0, dot));
    }

    private static String leaf(String path) {
        return path.substring(path.lastIndexOf('.') + 1);
    }

    private static Set<String> projectionNames(Map<String, Block> modules) {
        Set<String> names = new TreeSet<>();
        modules.forEach(
                (path, block) -> {
                    if (block instanceof LinearProjection) {
                        names.add(leaf(path));
                    }
                });
        return names;
    }
}
