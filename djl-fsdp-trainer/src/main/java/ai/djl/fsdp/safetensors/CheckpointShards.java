package ai.djl.fsdp.safetensors;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Hugging Face's layout of a checkpoint too large for one file: numbered {@code
 * model-XXXXX-of-YYYYY.safetensors} shards, a tensor never split, and an index mapping each tensor
 * to its shard.
 */
public final class CheckpointShards {

    /** The name of a numbered shard, as {@link #fileName} gives it for more than one. */
    private static final Pattern SHARD_FILE =
            Pattern.compile("model-\\d{5}-of-\\d{5}\\.safetensors");

    private CheckpointShards() {}

    /**
     * Splits tensors into shards in order, a new shard starting where the next tensor would take
     * the current one past {@code maxShardBytes} (a larger single tensor gets a shard of its own).
     *
     * @param byteSizes each tensor's bytes, in file order
     * @param maxShardBytes the most tensor bytes one shard holds
     * @return the names in each shard; one shard when they all fit
     */
    public static List<List<String>> plan(Map<String, Long> byteSizes, long maxShardBytes) {
        if (maxShardBytes <= 0) {
            throw new IllegalArgumentException(
                    "the largest shard must be positive, got " + maxShardBytes + " bytes");
        }
        List<List<String>> shards = new ArrayList<>();
        List<String> current = new ArrayList<>();
        long currentBytes = 0;
        for (Map.Entry<String, Long> e : byteSizes.entrySet()) {
            long bytes = e.getValue();
            if (!current.isEmpty() && currentBytes + bytes > maxShardBytes) {
                shards.add(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(e.getKey());
            currentBytes += bytes;
        }
        shards.add(current);
        return shards;
    }

    /**
     * Returns the file of shard {@code index} (from 0) of {@code count}: {@code model.safetensors}
     * when there is one, else Hugging Face's {@code model-00001-of-00003.safetensors}.
     *
     * @param index the shard, from 0
     * @param count the number of shards
     * @return the file name
     */
    public static String fileName(int index, int count) {
        if (count == 1) {
            return SafetensorsCheckpoint.SINGLE_FILE;
        }
        return String.format(Locale.ROOT, "model-%05d-of-%05d.safetensors", index + 1, count);
    }

    /**
     * Writes {@code model.safetensors.index.json} for shards of more than one file (atomically).
     *
     * @param directory the checkpoint directory
     * @param shards the names in each shard, as {@link #plan} made them
     * @param totalBytes the tensors' bytes, all shards together
     * @throws IOException if writing fails
     */
    public static void writeIndex(Path directory, List<List<String>> shards, long totalBytes)
            throws IOException {
        JsonObject weightMap = new JsonObject();
        for (int i = 0; i < shards.size(); i++) {
            String file = fileName(i, shards.size());
            shards.get(i).forEach(name -> weightMap.addProperty(name, file));
        }
        JsonObject index = new JsonObject();
        JsonObject indexMetadata = new JsonObject();
        indexMetadata.addProperty("total_size", totalBytes);
        index.add("metadata", indexMetadata);
        index.add("weight_map", weightMap);
        AtomicFiles.writeString(
                directory.resolve(SafetensorsCheckpoint.INDEX_FILE),
                new GsonBuilder().setPrettyPrinting().create().toJson(index));
    }

    /**
     * Writes the writer's tensors as one {@code model.safetensors} if they fit in {@code
     * maxShardBytes}, else as numbered shards with a {@code model.safetensors.index.json}.
     */
    static void write(SafetensorsWriter writer, Path directory, long maxShardBytes)
            throws IOException {
        Map<String, Long> sizes = writer.byteSizes();
        List<List<String>> shards = plan(sizes, maxShardBytes);
        for (int i = 0; i < shards.size(); i++) {
            writer.write(directory.resolve(fileName(i, shards.size())), shards.get(i));
        }
        if (shards.size() > 1) {
            writeIndex(directory, shards, sizes.values().stream().mapToLong(Long::longValue).sum());
        }
        removeStale(directory, shards.size());
    }

    /**
     * Returns whether a file of this name holds a model's weights in Hugging Face's layout: {@code
     * model.safetensors}, {@code model.safetensors.index.json} or a numbered shard.
     *
     * @param name the file's name
     * @return true for a name of the weights' layout
     */
    public static boolean isWeightsFile(String name) {
        return name.equals(SafetensorsCheckpoint.SINGLE_FILE)
                || name.equals(SafetensorsCheckpoint.INDEX_FILE)
                || SHARD_FILE.matcher(name).matches();
    }

    /**
     * Removes what an earlier save left in {@code directory} that the save of {@code count} files
     * just committed did not write: after a single {@code model.safetensors}, the index and every
     * numbered shard; after numbered shards, {@code model.safetensors} and the shards of another
     * count. Left there, a reader would take the old weights (this project's reader looks for the
     * index first, transformers for {@code model.safetensors}). Only the names this layout uses are
     * touched; every other file stays.
     *
     * @param directory the checkpoint directory
     * @param count the number of files the save wrote
     * @throws IOException if a file cannot be deleted
     */
    public static void removeStale(Path directory, int count) throws IOException {
        if (count == 1) {
            // The index first: without it, a reader no longer looks for the shards.
            Files.deleteIfExists(directory.resolve(SafetensorsCheckpoint.INDEX_FILE));
        } else {
            Files.deleteIfExists(directory.resolve(SafetensorsCheckpoint.SINGLE_FILE));
        }
        Set<String> written = new HashSet<>();
        for (int i = 0; i < count; i++) {
            written.add(fileName(i, count));
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                if (SHARD_FILE.matcher(name).matches()
                        && !written.contains(name)
                        && !Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
                    Files.delete(file);
                }
            }
        }
    }
}
