package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraState;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Loads and saves a model's weights as a Hugging Face checkpoint directory: {@code config.json}
 * plus {@code model.safetensors} (or shards and {@code model.safetensors.index.json}).
 *
 * <p>Loading is strict, as it should be for a model about to be trained: every parameter must be in
 * the checkpoint with its shape, and every tensor in the checkpoint must belong to the model. It
 * accepts what Hugging Face's own loader accepts: names without the base-model prefix (GPT-2's hub
 * checkpoint says {@code h.0.attn.c_attn.weight}), a tied head stored under either name or both,
 * buffers the model computes (GPT-2's {@code attn.bias}), and F16 or BF16 tensors (widened).
 */
public final class HfCheckpoint {

    /** Hugging Face's default largest shard. */
    public static final long DEFAULT_MAX_SHARD_BYTES = 5_000_000_000L;

    private HfCheckpoint() {}

    /**
     * Copies a checkpoint's tensors into an initialized model's parameters.
     *
     * @param model the model
     * @param path the checkpoint directory or safetensors file
     * @throws IOException if reading fails
     * @throws IllegalArgumentException if the checkpoint does not match the model, naming the
     *     missing and unexpected tensors or the mismatched shape
     */
    public static void load(CausalLM model, Path path) throws IOException {
        load(model, path, null);
    }

    /**
     * Copies a checkpoint's tensors into an initialized model's parameters, its vocabulary grown as
     * {@code resize} says (see {@link #shardSource(CausalLM, Path, VocabularyResize)}).
     *
     * @param model the model, of the grown vocabulary when {@code resize} is given
     * @param path the checkpoint directory or safetensors file
     * @param resize how the checkpoint's vocabulary grows, or null when it does not
     * @throws IOException if reading fails
     * @throws IllegalArgumentException if the checkpoint does not match the model
     */
    public static void load(CausalLM model, Path path, VocabularyResize resize) throws IOException {
        try (CheckpointShardSource source = shardSource(model, path, resize)) {
            for (Map.Entry<String, Parameter> entry : StateDict.parameters(model).entrySet()) {
                Parameter parameter = entry.getValue();
                try (NDManager scope = parameter.getArray().getManager().newSubManager()) {
                    NDArray flat = source.read(scope, parameter, 0, parameter.getShape().size());
                    StateDict.copyInto(
                            entry.getKey(), parameter, flat.reshape(parameter.getShape()));
                }
            }
        }
    }

    /**
     * Opens a checkpoint as the source FSDP shards a model from: each rank reads only the byte
     * ranges of its own shards (see {@code TrainerOptions.Builder#optInitialValues}). The model
     * needs parameters of the right shapes but not their values: build it with {@link
     * ai.djl.fsdp.zoo.Models#forCheckpoint} and initialize it through {@code
     * FsdpTrainer.initialize}, so that no rank ever holds the whole model. The names and shapes
     * (which the zoo's blocks have before initialization) are checked now, as {@link #load} checks
     * them; adapters added later (LoRA) are not in the checkpoint and keep their own values.
     *
     * @param model the model, before adapters are added
     * @param path the checkpoint directory or safetensors file
     * @return the source; close it once the model is initialized
     * @throws IOException if the checkpoint cannot be opened
     * @throws IllegalArgumentException if the checkpoint does not match the model
     */
    public static CheckpointShardSource shardSource(CausalLM model, Path path) throws IOException {
        return shardSource(model, path, null);
    }

    /**
     * Opens a checkpoint as the source FSDP shards a model from, as {@link #shardSource(CausalLM,
     * Path)} does, for a model whose vocabulary is larger than the checkpoint's: its token
     * embedding and untied head ({@link CausalLM#vocabularyParameters()}) have {@code
     * resize.getRows()} rows where the checkpoint stores {@code resize.getStoredRows()}. Their
     * stored rows are read as stored, and the rows they gain are drawn as {@link VocabularyResize}
     * says, only by a rank whose shard holds some of them.
     *
     * @param model the model, of the grown vocabulary, before adapters are added
     * @param path the checkpoint directory or safetensors file
     * @param resize how the vocabulary grows, or null for a model of the checkpoint's own size
     * @return the source; close it once the model is initialized
     * @throws IOException if the checkpoint cannot be opened
     * @throws IllegalArgumentException if the checkpoint does not match the model
     */
    public static CheckpointShardSource shardSource(
            CausalLM model, Path path, VocabularyResize resize) throws IOException {
        SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(path);
        try {
            Map<String, Parameter> parameters = StateDict.parameters(model);
            Set<Parameter> vocabulary = Collections.newSetFromMap(new IdentityHashMap<>());
            if (resize != null) {
                vocabulary.addAll(model.vocabularyParameters());
            }
            Map<String, String> storedById = new HashMap<>();
            Map<String, AddedRows> addedById = new HashMap<>();
            for (Map.Entry<String, String> entry : sources(model, checkpoint, path).entrySet()) {
                Parameter parameter = parameters.get(entry.getKey());
                Shape stored = checkpoint.info(entry.getValue()).shape();
                Shape shape = parameter.getShape();
                if (vocabulary.contains(parameter)
                        && stored.equals(new Shape(resize.getStoredRows(), shape.get(1)))
                        && shape.get(0) == resize.getRows()) {
                    addedById.put(
                            parameter.getId(), new AddedRows(resize, entry.getKey(), shape.get(1)));
                } else if (!shape.equals(stored)) {
                    throw new IllegalArgumentException(
                            "shape mismatch for "
                                    + entry.getKey()
                                    + ": the model has "
                                    + shape
                                    + ", the checkpoint "
                                    + stored);
                }
                storedById.put(parameter.getId(), entry.getValue());
            }
            return new CheckpointShardSource(checkpoint, storedById, addedById);
        } catch (RuntimeException e) {
            checkpoint.close();
            throw e;
        }
    }

    /**
     * Maps each of the model's parameters to the checkpoint tensor that holds it.
     *
     * @throws IllegalArgumentException naming the missing and unexpected tensors
     */
    private static Map<String, String> sources(
            CausalLM model, SafetensorsCheckpoint checkpoint, Path path) {
        Map<String, Parameter> parameters = StateDict.parameters(model);
        Map<String, String> aliases = StateDict.aliases(model);
        Map<String, String> sources = new LinkedHashMap<>();
        Set<String> unexpected = new TreeSet<>();
        for (String stored : checkpoint.names()) {
            String name = canonical(model, stored, parameters, aliases);
            if (name != null) {
                // A tied head stored under both names: either copy will do, keep the first.
                sources.putIfAbsent(name, stored);
            } else if (!model.isComputedBuffer(stored)) {
                unexpected.add(stored);
            }
        }
        Set<String> missing = new TreeSet<>(parameters.keySet());
        missing.removeAll(sources.keySet());
        if (!missing.isEmpty() || !unexpected.isEmpty()) {
            throw new IllegalArgumentException(
                    "checkpoint "
                            + path
                            + " does not fit "
                            + model.getClass().getSimpleName()
                            + ": missing "
                            + summary(missing)
                            + ", unexpected "
                            + summary(unexpected)
                            + " (a checkpoint of another model or configuration?)");
        }
        return sources;
    }

    /**
     * Saves a model as a Hugging Face checkpoint directory: {@code config.json} and its weights
     * (float32; a tied head is stored once, under the embedding's name, as Hugging Face does).
     *
     * @param model the model
     * @param directory the directory (created if needed)
     * @param maxShardBytes the largest shard; {@link #DEFAULT_MAX_SHARD_BYTES} normally
     * @throws IOException if writing fails
     */
    public static void save(CausalLM model, Path directory, long maxShardBytes) throws IOException {
        Files.createDirectories(directory);
        SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
        StateDict.parameters(model)
                .forEach((name, parameter) -> writer.add(name, parameter.getArray()));
        writer.writeCheckpoint(directory, maxShardBytes);
        ConfigJson.write(model.getConfig(), directory);
    }

    /**
     * Saves a model with Hugging Face's default shard size.
     *
     * @param model the model
     * @param directory the directory
     * @throws IOException if writing fails
     */
    public static void save(CausalLM model, Path directory) throws IOException {
        save(model, directory, DEFAULT_MAX_SHARD_BYTES);
    }

    /**
     * Saves a model trained with FSDP as a plain Hugging Face checkpoint directory, {@code
     * config.json} and {@code model.safetensors}, its LoRA adapters (if any) merged into the base
     * weights: one FSDP unit at a time, so no rank holds the whole model (see {@link
     * LoraState#merged}). A collective: every rank calls it; rank 0 writes.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @throws IOException if writing fails
     */
    public static void saveMerged(FsdpTrainer trainer, CausalLM model, Path directory)
            throws IOException {
        saveMerged(trainer, model, directory, Dtype.F32, DEFAULT_MAX_SHARD_BYTES);
    }

    /**
     * Saves a model trained with FSDP as a plain Hugging Face checkpoint directory, its LoRA
     * adapters (if any) merged, as {@link #saveMerged(FsdpTrainer, CausalLM, Path)} does, with its
     * floating tensors stored as {@code floatType} (each cast as its unit is written) and split
     * into {@code model-0000N-of-0000M.safetensors} files of at most {@code maxShardBytes} with
     * {@code model.safetensors.index.json} when it is larger. A collective: every rank calls it;
     * rank 0 writes.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @param floatType {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @param maxShardBytes the most tensor bytes one file holds
     * @throws IOException if writing fails
     */
    public static void saveMerged(
            FsdpTrainer trainer,
            CausalLM model,
            Path directory,
            Dtype floatType,
            long maxShardBytes)
            throws IOException {
        saveFull(trainer, model, LoraState.merged(model), directory, floatType, maxShardBytes);
    }

    /**
     * Saves the base model under a LoRA model trained with FSDP, without its adapters, as a plain
     * Hugging Face checkpoint directory the adapters can be put on again (for a base that had no
     * weights before the run, the only copy of what the adapters were trained on), written as
     * {@link #saveMerged(FsdpTrainer, CausalLM, Path, Dtype, long)} writes. A collective: every
     * rank calls it; rank 0 writes.
     *
     * @param trainer the trainer of {@code model}
     * @param model the model, adapted or not
     * @param directory the directory (created if needed) on rank 0
     * @param floatType {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @param maxShardBytes the most tensor bytes one file holds
     * @throws IOException if writing fails
     */
    public static void saveBase(
            FsdpTrainer trainer,
            CausalLM model,
            Path directory,
            Dtype floatType,
            long maxShardBytes)
            throws IOException {
        saveFull(trainer, model, LoraState.base(model), directory, floatType, maxShardBytes);
    }

    private static void saveFull(
            FsdpTrainer trainer,
            CausalLM model,
            StateTransform state,
            Path directory,
            Dtype floatType,
            long maxShardBytes)
            throws IOException {
        if (trainer.getModel().getBlock() != model) {
            throw new IllegalArgumentException("the trainer does not train this model");
        }
        if (trainer.getRank() == 0) {
            Files.createDirectories(directory);
        }
        trainer.saveFullState(directory, state.withFloatsAs(floatType), maxShardBytes);
        if (trainer.getRank() == 0) {
            ConfigJson.write(model.getConfig(), directory, torchDtype(floatType));
        }
    }

    /**
     * Saves the LoRA adapters of a model trained with FSDP in PEFT's layout ({@code
     * adapter_config.json}, {@code adapter_model.safetensors}), every rank's part of every adapter,
     * gathering one FSDP unit at a time. A collective: every rank calls it; rank 0 writes.
     *
     * @param trainer the trainer of the adapted model
     * @param config the configuration the adapters were made with
     * @param directory the adapter directory (created if needed) on rank 0
     * @throws IOException if writing fails
     */
    public static void saveAdapters(FsdpTrainer trainer, LoraConfig config, Path directory)
            throws IOException {
        Block root = trainer.getModel().getBlock();
        if (trainer.getRank() == 0) {
            Lora.saveConfig(root, config, directory);
        }
        trainer.saveFullState(
                directory.resolve(Lora.WEIGHTS_FILE), LoraState.adapters(root, config));
    }

    private static String torchDtype(Dtype type) {
        return switch (type) {
            case F32 -> "float32";
            case BF16 -> "bfloat16";
            case F16 -> "float16";
            default -> throw new IllegalArgumentException("a model is saved as F32, BF16 or F16");
        };
    }

    /** Lists a few names of a set, which for a wrong model can hold hundreds. */
    private static String summary(Set<String> names) {
        int shown = 8;
        String listed = String.join(", ", names.stream().limit(shown).toList());
        return names.size() + " [" + listed + (names.size() > shown ? ", ...]" : "]");
    }

    /** Returns the model parameter a stored tensor holds, or null if it is not one. */
    private static String canonical(
            CausalLM model,
            String stored,
            Map<String, Parameter> parameters,
            Map<String, String> aliases) {
        for (String name : new String[] {stored, model.basePrefix() + stored}) {
            if (parameters.containsKey(name)) {
                return name;
            }
            if (aliases.containsKey(name)) {
                return aliases.get(name);
            }
        }
        return null;
    }
}
