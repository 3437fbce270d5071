package ai.djl.fsdp.safetensors;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Hugging Face's layout of a checkpoint too large for one file: numbered {@code
 * model-XXXXX-of-YYYYY.safetensors} shards, a tensor never split, and an index mapping each tensor
 * to its shard.
 */
final class CheckpointShards {

    private CheckpointShards() {}

    /**
     * Writes the writer's tensors as one {@code model.safetensors} if they fit in {@code
     * maxShardBytes}, else as numbered shards with a {@code model.safetensors.index.json}.
     */
    static void write(SafetensorsWriter writer, Path directory, long maxShardBytes)
            throws IOException {
        List<List<String>> shards = new ArrayList<>();
        List<String> current = new ArrayList<>();
        long currentBytes = 0;
        long totalBytes = 0;
        for (Map.Entry<String, Long> e : writer.byteSizes().entrySet()) {
            long bytes = e.getValue();
            if (!current.isEmpty() && currentBytes + bytes > maxShardBytes) {
                shards.add(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(e.getKey());
            currentBytes += bytes;
            totalBytes += bytes;
        }
        shards.add(current);
        if (shards.size() == 1) {
            writer.write(directory.resolve(SafetensorsCheckpoint.SINGLE_FILE), shards.get(0));
            return;
        }
        JsonObject weightMap = new JsonObject();
        for (int i = 0; i < shards.size(); i++) {
            String file =
                    String.format(
                            Locale.ROOT, "model-%05d-of-%05d.safetensors", i + 1, shards.size());
            writer.write(directory.resolve(file), shards.get(i));
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
}
