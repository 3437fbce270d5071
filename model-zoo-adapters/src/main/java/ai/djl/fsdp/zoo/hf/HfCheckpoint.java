package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.qlora.PrequantizedSource;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
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
 * plus {@code model.safetensors} (or shards and {@code model.safetensors.index.json}). A model
 * trained in the FSDP trainer, whose parameters are sharded over the ranks, is saved by {@code
 * ai.djl.fsdp.zoo.sharded.ShardedSave} instead.
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
    public static void load(PretrainedModel model, Path path) throws IOException {
        load(model, path, null);
    }

    /**
     * Copies a checkpoint's tensors into an initialized model's parameters, its vocabulary grown as
     * {@code resize} says (see {@link #shardSource(PretrainedModel, Path, VocabularyResize)}).
     *
     * @param model the model, of the grown vocabulary when {@code resize} is given
     * @param path the checkpoint directory or safetensors file
     * @param resize how the checkpoint's vocabulary grows, or null when it does not
     * @throws IOException if reading fails
     * @throws IllegalArgumentException if the checkpoint does not match the model
     */
    public static void load(PretrainedModel model, Path path, VocabularyResize resize)
            throws IOException {
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
    public static CheckpointShardSource shardSource(PretrainedModel model, Path path)
            throws IOException {
        return shardSource(model, path, null);
    }

    /**
     * Opens a checkpoint as the source FSDP shards a model from, as {@link
     * #shardSource(PretrainedModel, Path)} does, for a model whose vocabulary is larger than the
     * checkpoint's: its token embedding and untied head ({@link
     * PretrainedModel#vocabularyParameters()}) have {@code resize.getRows()} rows where the
     * checkpoint stores {@code resize.getStoredRows()}. Their stored rows are read as stored, and
     * the rows they gain are drawn as {@link VocabularyResize} says, only by a rank whose shard
     * holds some of them.
     *
     * @param model the model, of the grown vocabulary, before adapters are added
     * @param path the checkpoint directory or safetensors file
     * @param resize how the vocabulary grows, or null for a model of the checkpoint's own size
     * @return the source; close it once the model is initialized
     * @throws IOException if the checkpoint cannot be opened
     * @throws IllegalArgumentException if the checkpoint does not match the model
     */
    public static CheckpointShardSource shardSource(
            PretrainedModel model, Path path, VocabularyResize resize) throws IOException {
        SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(path);
        try {
            Map<String, Parameter> parameters = StateDict.parameters(model);
            Set<Parameter> vocabulary = Collections.newSetFromMap(new IdentityHashMap<>());
            if (resize != null) {
                vocabulary.addAll(model.vocabularyParameters());
            }
            PrequantizedSource packed =
                    PrequantizedSource.match(model, checkpoint, model.basePrefix());
            Map<String, String> storedById = new HashMap<>();
            Map<String, AddedRows> addedById = new HashMap<>();
            for (Map.Entry<String, String> entry :
                    sources(model, checkpoint, path, packed).entrySet()) {
                Parameter parameter = parameters.get(entry.getKey());
                if (packed.holds(parameter)) {
                    continue;
                }
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
            return new CheckpointShardSource(checkpoint, storedById, addedById, packed);
        } catch (RuntimeException e) {
            checkpoint.close();
            throw e;
        }
    }

    /**
     * Maps each of the model's parameters to the checkpoint tensor that holds it; the 4-bit layers'
     * parameters and tensors are {@code packed}'s to match.
     *
     * @throws IllegalArgumentException naming the missing and unexpected tensors
     */
    private static Map<String, String> sources(
            PretrainedModel model,
            SafetensorsCheckpoint checkpoint,
            Path path,
            PrequantizedSource packed) {
        Map<String, Parameter> parameters = StateDict.parameters(model);
        Map<String, String> aliases = StateDict.aliases(model);
        Map<String, String> sources = new LinkedHashMap<>();
        Set<String> unexpected = new TreeSet<>();
        for (String stored : checkpoint.names()) {
            if (packed.tensors().contains(stored)) {
                continue;
            }
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
        missing.removeIf(name -> packed.holds(parameters.get(name)));
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
    public static void save(PretrainedModel model, Path directory, long maxShardBytes)
            throws IOException {
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
    public static void save(PretrainedModel model, Path directory) throws IOException {
        save(model, directory, DEFAULT_MAX_SHARD_BYTES);
    }

    /** Lists a few names of a set, which for a wrong model can hold hundreds. */
    private static String summary(Set<String> names) {
        int shown = 8;
        String listed = String.join(", ", names.stream().limit(shown).toList());
        return names.size() + " [" + listed + (names.size() > shown ? ", ...]" : "]");
    }

    /** Returns the model parameter a stored tensor holds, or null if it is not one. */
    private static String canonical(
            PretrainedModel model,
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
