package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.safetensors.SafetensorsException;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.safetensors.TensorInfo;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reads a sharded checkpoint written by any number of ranks: for each parameter (or optimizer
 * state) only the elements a rank asks for, from the chunks that hold them. Opening checks the
 * checkpoint against the model and every chunk against its file, so a checkpoint of another model,
 * a missing or truncated file is reported, naming the file and the tensor, before training.
 */
public final class ShardedCheckpointReader implements AutoCloseable {

    private final Path directory;
    private final CheckpointMetadata metadata;
    private final Map<String, SafetensorsFile> files = new HashMap<>();

    private ShardedCheckpointReader(Path directory, CheckpointMetadata metadata) {
        this.directory = directory;
        this.metadata = metadata;
    }

    /**
     * Opens a complete checkpoint and checks it holds exactly these parameters, with their shapes,
     * and the optimizer state its metadata lists for each trainable one.
     *
     * @param directory the checkpoint directory
     * @param parameters the model's parameters by dotted name
     * @return the reader
     * @throws IOException if the checkpoint is incomplete, does not fit the model, or a file is
     *     missing or truncated
     */
    public static ShardedCheckpointReader open(Path directory, Map<String, Parameter> parameters)
            throws IOException {
        return open(directory, parameters, true);
    }

    private static ShardedCheckpointReader open(
            Path directory, Map<String, Parameter> parameters, boolean withOptimizer)
            throws IOException {
        if (!Files.isDirectory(directory)) {
            throw new IOException("No checkpoint directory at " + directory);
        }
        if (!CheckpointDirectory.isComplete(directory)) {
            throw new IOException(
                    directory
                            + " is not a complete checkpoint (no "
                            + CheckpointDirectory.COMPLETE
                            + " marker): it was being written when its job stopped. Resume from"
                            + " an earlier checkpoint-<step> directory.");
        }
        ShardedCheckpointReader reader =
                new ShardedCheckpointReader(directory, CheckpointMetadata.read(directory));
        try {
            reader.check(
                    parameters,
                    withOptimizer ? reader.metadata.getOptimizerKinds() : List.of(),
                    withOptimizer);
            return reader;
        } catch (IOException | RuntimeException e) {
            reader.close();
            throw e;
        }
    }

    /**
     * Loads a sharded checkpoint's parameters into an ordinary, unsharded model in one process (for
     * inference, say): each parameter is assembled from its chunks; the optimizer state is left
     * alone.
     *
     * @param directory a complete checkpoint directory, written by any number of ranks
     * @param root the model, initialized, with the same parameters
     * @throws IOException if the checkpoint is incomplete or does not fit the model
     */
    public static void loadInto(Path directory, Block root) throws IOException {
        Map<String, Parameter> parameters = StateDict.parameters(root);
        try (ShardedCheckpointReader reader = open(directory, parameters, false)) {
            for (Map.Entry<String, Parameter> entry : parameters.entrySet()) {
                Parameter parameter = entry.getValue();
                NDManager manager = parameter.getArray().getManager();
                try (NDManager scope = manager.newSubManager()) {
                    NDArray flat =
                            reader.read(scope, entry.getKey(), 0, parameter.getShape().size());
                    StateDict.copyInto(
                            entry.getKey(), parameter, flat.reshape(parameter.getShape()));
                }
            }
        }
    }

    /** Returns what the checkpoint holds. */
    public CheckpointMetadata getMetadata() {
        return metadata;
    }

    private void check(
            Map<String, Parameter> parameters, List<String> optimizerKinds, boolean withOptimizer)
            throws IOException {
        Path metadataFile = directory.resolve(CheckpointDirectory.METADATA);
        Set<String> expected = new TreeSet<>();
        parameters.forEach(
                (name, parameter) -> {
                    expected.add(name);
                    if (parameter.requiresGradient()) {
                        optimizerKinds.forEach(
                                kind ->
                                        expected.add(
                                                CheckpointMetadata.OPTIMIZER_PREFIX
                                                        + kind
                                                        + "."
                                                        + name));
                    }
                });
        Set<String> missing = new TreeSet<>(expected);
        missing.removeAll(metadata.getTensors().keySet());
        Set<String> unexpected = new TreeSet<>(metadata.getTensors().keySet());
        unexpected.removeAll(expected);
        if (!withOptimizer) {
            unexpected.removeIf(name -> name.startsWith(CheckpointMetadata.OPTIMIZER_PREFIX));
        }
        if (!missing.isEmpty() || !unexpected.isEmpty()) {
            throw new IOException(
                    metadataFile
                            + " does not fit this model (a checkpoint of another model, or of"
                            + " other trainable parameters or optimizer): missing "
                            + summary(missing)
                            + ", unexpected "
                            + summary(unexpected));
        }
        for (Map.Entry<String, Parameter> entry : parameters.entrySet()) {
            long[] shape = metadata.getTensors().get(entry.getKey()).getShape();
            if (!Arrays.equals(shape, entry.getValue().getShape().getShape())) {
                throw new IOException(
                        metadataFile
                                + ": "
                                + entry.getKey()
                                + " has shape "
                                + new Shape(shape)
                                + " in the checkpoint, "
                                + entry.getValue().getShape()
                                + " in the model");
            }
        }
        for (Map.Entry<String, CheckpointMetadata.Tensor> entry :
                metadata.getTensors().entrySet()) {
            long covered = 0;
            for (CheckpointMetadata.Chunk chunk : entry.getValue().getChunks()) {
                SafetensorsFile file = file(chunk.getFile());
                TensorInfo info = file.contains(chunk.getKey()) ? file.info(chunk.getKey()) : null;
                if (info == null || info.elements() != chunk.getTo() - chunk.getFrom()) {
                    throw new IOException(
                            directory.resolve(chunk.getFile())
                                    + " does not hold elements ["
                                    + chunk.getFrom()
                                    + ", "
                                    + chunk.getTo()
                                    + ") of "
                                    + entry.getKey()
                                    + " as "
                                    + metadataFile
                                    + " says");
                }
                if (chunk.getFrom() != covered) {
                    throw new IOException(
                            metadataFile + ": the chunks of " + entry.getKey() + " leave a gap");
                }
                covered = chunk.getTo();
            }
            if (covered != new Shape(entry.getValue().getShape()).size()) {
                throw new IOException(
                        metadataFile + ": the chunks of " + entry.getKey() + " are incomplete");
            }
        }
    }

    /**
     * Returns a source of one kind of state: the parameters' values ({@code ""}), or an optimizer
     * state ({@code "optimizer.<kind>."}).
     *
     * @param prefix the prefix of the tensors' names
     * @param names each parameter's dotted name
     * @return the source
     */
    public ParameterSource source(String prefix, Map<Parameter, String> names) {
        return (manager, parameter, from, to) ->
                read(manager, prefix + names.get(parameter), from, to);
    }

    /**
     * Reads elements {@code [from, to)} of a tensor's flattening, from the chunks that hold them.
     *
     * @param manager the manager of the result
     * @param name the tensor's name
     * @param from the first element
     * @param to one past the last element
     * @return a 1-D array
     * @throws IOException if reading fails
     */
    public NDArray read(NDManager manager, String name, long from, long to) throws IOException {
        CheckpointMetadata.Tensor tensor = metadata.getTensors().get(name);
        if (tensor == null) {
            throw new IOException("The checkpoint in " + directory + " holds no " + name);
        }
        NDList pieces = new NDList();
        for (CheckpointMetadata.Chunk chunk : tensor.getChunks()) {
            long a = Math.max(from, chunk.getFrom());
            long b = Math.min(to, chunk.getTo());
            if (a < b) {
                pieces.add(
                        file(chunk.getFile())
                                .read(
                                        manager,
                                        chunk.getKey(),
                                        a - chunk.getFrom(),
                                        b - chunk.getFrom()));
            }
        }
        if (pieces.size() == 1) {
            return pieces.head();
        }
        NDArray joined = NDArrays.concat(pieces);
        pieces.close();
        return joined;
    }

    private SafetensorsFile file(String name) throws IOException {
        SafetensorsFile file = files.get(name);
        if (file == null) {
            Path path = directory.resolve(name);
            if (!Files.isRegularFile(path)) {
                throw new IOException(
                        path + " is missing: the checkpoint in " + directory + " is incomplete");
            }
            try {
                file = SafetensorsFile.open(path);
            } catch (SafetensorsException e) {
                throw new IOException(
                        "The checkpoint in " + directory + " is damaged: " + e.getMessage(), e);
            }
            files.put(name, file);
        }
        return file;
    }

    private static String summary(Set<String> names) {
        List<String> shown = names.stream().limit(6).toList();
        return names.size() + " " + shown + (names.size() > shown.size() ? " ..." : "");
    }

    @Override
    public void close() throws IOException {
        IOException failure = null;
        for (SafetensorsFile file : new LinkedHashMap<>(files).values()) {
            try {
                file.close();
            } catch (IOException e) {
                failure = e;
            }
        }
        files.clear();
        if (failure != null) {
            throw failure;
        }
    }
}
