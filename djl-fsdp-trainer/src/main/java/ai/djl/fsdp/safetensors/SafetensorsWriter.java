package ai.djl.fsdp.safetensors;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Collects tensors and writes them as a safetensors file, or as a checkpoint directory sharded
 * the way Hugging Face shards ({@code model-00001-of-00002.safetensors} plus {@code
 * model.safetensors.index.json}). Every file is written atomically (see {@link AtomicFiles}).
 *
 * <pre>{@code
 * new SafetensorsWriter().add("wte.weight", wte).putMetadata("format", "pt").write(path);
 * }</pre>
 */
public final class SafetensorsWriter {

    private record Entry(Dtype dtype, Shape shape, ByteBuffer bytes) {}

    private final Map<String, Entry> tensors = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    /**
     * Adds a tensor, stored with the element type it has (a copy of its bytes is taken now).
     *
     * @param name the tensor name
     * @param array the tensor; bfloat16 arrays are not supported (DJL cannot describe them)
     * @return this writer
     */
    public SafetensorsWriter add(String name, NDArray array) {
        Dtype dtype = Dtype.of(array.getDataType());
        ByteBuffer bytes = array.toByteBuffer();
        if (bytes.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException("safetensors is little-endian; this platform is not");
        }
        return add(name, dtype, array.getShape(), bytes);
    }

    /**
     * Adds a tensor from raw little-endian bytes, for element types DJL cannot hold (such as
     * bfloat16).
     *
     * @param name the tensor name
     * @param dtype the element type
     * @param shape the shape
     * @param littleEndianBytes exactly {@code shape.size() * dtype.bytes()} remaining bytes
     * @return this writer
     */
    public SafetensorsWriter add(String name, Dtype dtype, Shape shape, ByteBuffer littleEndianBytes) {
        if (name.equals(SafetensorsFile.METADATA_KEY)) {
            throw new IllegalArgumentException(name + " is reserved for metadata");
        }
        if (tensors.containsKey(name)) {
            throw new IllegalArgumentException("tensor \"" + name + "\" was added twice");
        }
        long expected = shape.size() * dtype.bytes();
        if (littleEndianBytes.remaining() != expected) {
            throw new IllegalArgumentException(
                    "tensor \"" + name + "\" of " + shape + " " + dtype + " needs " + expected
                            + " bytes, got " + littleEndianBytes.remaining());
        }
        tensors.put(name, new Entry(dtype, shape, littleEndianBytes.slice()));
        return this;
    }

    /**
     * Adds a {@code __metadata__} string (Hugging Face writes {@code "format": "pt"}).
     *
     * @param key the key
     * @param value the value
     * @return this writer
     */
    public SafetensorsWriter putMetadata(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    /**
     * Writes every tensor to one safetensors file.
     *
     * @param path the file to create or replace
     * @throws IOException if writing fails
     */
    public void write(Path path) throws IOException {
        write(path, new ArrayList<>(tensors.keySet()));
    }

    /**
     * Writes the tensors as a checkpoint in a directory: one {@code model.safetensors} if they fit
     * in {@code maxShardBytes}, otherwise numbered shards (a tensor is never split) and a {@code
     * model.safetensors.index.json} mapping each tensor to its shard.
     *
     * @param directory the checkpoint directory
     * @param maxShardBytes the most tensor bytes one shard holds (a larger single tensor gets a
     *     shard of its own)
     * @throws IOException if writing fails
     */
    public void writeCheckpoint(Path directory, long maxShardBytes) throws IOException {
        List<List<String>> shards = new ArrayList<>();
        List<String> current = new ArrayList<>();
        long currentBytes = 0;
        long totalBytes = 0;
        for (Map.Entry<String, Entry> e : tensors.entrySet()) {
            long bytes = e.getValue().bytes().remaining();
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
            write(directory.resolve(SafetensorsCheckpoint.SINGLE_FILE), shards.get(0));
            return;
        }
        JsonObject weightMap = new JsonObject();
        for (int i = 0; i < shards.size(); i++) {
            String file = String.format("model-%05d-of-%05d.safetensors", i + 1, shards.size());
            write(directory.resolve(file), shards.get(i));
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

    private void write(Path path, List<String> names) throws IOException {
        JsonObject header = new JsonObject();
        if (!metadata.isEmpty()) {
            JsonObject meta = new JsonObject();
            metadata.forEach(meta::addProperty);
            header.add(SafetensorsFile.METADATA_KEY, meta);
        }
        long offset = 0;
        for (String name : names) {
            Entry entry = tensors.get(name);
            JsonObject json = new JsonObject();
            json.addProperty("dtype", entry.dtype().name());
            JsonArray shape = new JsonArray();
            for (long dim : entry.shape().getShape()) {
                shape.add(dim);
            }
            json.add("shape", shape);
            JsonArray offsets = new JsonArray();
            offsets.add(offset);
            offset += entry.bytes().remaining();
            offsets.add(offset);
            json.add("data_offsets", offsets);
            header.add(name, json);
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();
        AtomicFiles.write(
                path,
                channel -> {
                    AtomicFiles.writeFully(channel, head);
                    for (String name : names) {
                        AtomicFiles.writeFully(channel, tensors.get(name).bytes().duplicate());
                    }
                });
    }
}
