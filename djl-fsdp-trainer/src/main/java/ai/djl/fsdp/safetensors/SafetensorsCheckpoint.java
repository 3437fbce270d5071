package ai.djl.fsdp.safetensors;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import com.google.gson.JsonElement;
import com.google.gson.JsonParseException;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The tensors of a Hugging Face checkpoint, looked up by name across its safetensors files: a
 * single {@code model.safetensors}, or the shards listed by {@code model.safetensors.index.json}. A
 * read can cover a range of elements and is a positioned read of only those bytes, straight into
 * the tensor's memory; {@link #map} memory-maps a range instead (see {@link SafetensorsFile}).
 */
public final class SafetensorsCheckpoint implements AutoCloseable {

    /** The file name of an unsharded checkpoint. */
    public static final String SINGLE_FILE = "model.safetensors";

    /** The file name of a sharded checkpoint's index. */
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private static final String INDEX_FIX =
            ": re-download or re-save the checkpoint (its index lists each tensor's shard file)";

    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsFile> byName;

    private SafetensorsCheckpoint(
            List<SafetensorsFile> files, Map<String, SafetensorsFile> byName) {
        this.files = files;
        this.byName = byName;
    }

    /**
     * Returns whether a directory holds a checkpoint's weights ({@code model.safetensors} or {@code
     * model.safetensors.index.json}), not only a configuration.
     *
     * @param directory the directory
     * @return true if {@link #open} finds weights in it
     */
    public static boolean existsIn(Path directory) {
        return Files.exists(directory.resolve(SINGLE_FILE))
                || Files.exists(directory.resolve(INDEX_FILE));
    }

    /**
     * Opens a checkpoint.
     *
     * @param path a safetensors file, or a directory holding {@code model.safetensors.index.json}
     *     or {@code model.safetensors}
     * @return the checkpoint; close it when done
     * @throws IOException if a file cannot be read
     * @throws SafetensorsException if a file is corrupt or the index disagrees with the shards
     */
    public static SafetensorsCheckpoint open(Path path) throws IOException {
        if (!Files.isDirectory(path)) {
            SafetensorsFile file = SafetensorsFile.open(path);
            Map<String, SafetensorsFile> byName = new LinkedHashMap<>();
            file.getNames().forEach(name -> byName.put(name, file));
            return new SafetensorsCheckpoint(List.of(file), byName);
        }
        Path index = path.resolve(INDEX_FILE);
        if (Files.exists(index)) {
            return openSharded(index);
        }
        Path single = path.resolve(SINGLE_FILE);
        if (!Files.exists(single)) {
            throw new SafetensorsException(
                    path
                            + " holds neither "
                            + SINGLE_FILE
                            + " nor "
                            + INDEX_FILE
                            + ": is it a Hugging Face checkpoint saved with safetensors?");
        }
        return open(single);
    }

    private static SafetensorsCheckpoint openSharded(Path index) throws IOException {
        JsonElement root;
        try {
            root = JsonText.parse(Files.readString(index), true);
        } catch (JsonParseException e) {
            SafetensorsException failure =
                    new SafetensorsException(
                            index + " is not valid JSON: " + JsonText.describe(e) + INDEX_FIX);
            failure.addSuppressed(e);
            throw failure;
        } catch (CharacterCodingException e) {
            throw new SafetensorsException(index + " is not UTF-8 text" + INDEX_FIX);
        }
        JsonElement weightMap =
                root.isJsonObject() ? root.getAsJsonObject().get("weight_map") : null;
        if (weightMap == null || !weightMap.isJsonObject()) {
            throw new SafetensorsException(
                    index
                            + " has no \"weight_map\" object of tensor name to shard file"
                            + INDEX_FIX);
        }
        Path directory = index.toAbsolutePath().normalize().getParent();
        Map<String, SafetensorsFile> shards = new LinkedHashMap<>();
        Map<String, SafetensorsFile> byName = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, JsonElement> entry : weightMap.getAsJsonObject().entrySet()) {
                String shardName = shardName(index, directory, entry);
                SafetensorsFile shard = shards.get(shardName);
                if (shard == null) {
                    shard = SafetensorsFile.open(directory.resolve(shardName));
                    shards.put(shardName, shard);
                }
                if (!shard.contains(entry.getKey())) {
                    throw new SafetensorsException(
                            index
                                    + " places \""
                                    + entry.getKey()
                                    + "\" in "
                                    + shardName
                                    + ", which does not hold it");
                }
                byName.put(entry.getKey(), shard);
            }
        } catch (IOException | RuntimeException e) {
            for (SafetensorsFile shard : shards.values()) {
                shard.close();
            }
            throw e;
        }
        return new SafetensorsCheckpoint(new ArrayList<>(shards.values()), byName);
    }

    /**
     * Returns the shard file of an index entry, which must name a file inside the checkpoint
     * directory (a relative path that stays inside it once normalized; symbolic links, as in the
     * Hugging Face cache, are followed as usual).
     */
    private static String shardName(
            Path index, Path directory, Map.Entry<String, JsonElement> entry) {
        JsonElement value = entry.getValue();
        if (!(value instanceof JsonPrimitive p && p.isString())) {
            throw new SafetensorsException(
                    index
                            + " maps \""
                            + entry.getKey()
                            + "\" to "
                            + value
                            + ", not a shard file name"
                            + INDEX_FIX);
        }
        String name = value.getAsString();
        Path resolved;
        try {
            resolved = directory.resolve(name).normalize();
        } catch (InvalidPathException e) {
            resolved = null;
        }
        if (resolved == null || !resolved.startsWith(directory) || resolved.equals(directory)) {
            throw new SafetensorsException(
                    index
                            + " places \""
                            + entry.getKey()
                            + "\" in \""
                            + name
                            + "\", which is not a file inside "
                            + directory
                            + INDEX_FIX);
        }
        return name;
    }

    /**
     * Returns the tensor names.
     *
     * @return the names, in index (or header) order
     */
    public Set<String> names() {
        return Collections.unmodifiableSet(byName.keySet());
    }

    /**
     * Returns whether the checkpoint holds a tensor.
     *
     * @param name the tensor name
     * @return true if present
     */
    public boolean contains(String name) {
        return byName.containsKey(name);
    }

    /**
     * Returns a tensor's dtype, shape and offsets.
     *
     * @param name the tensor name
     * @return the header entry
     */
    public TensorInfo info(String name) {
        return file(name).info(name);
    }

    /**
     * Reads a whole tensor; see {@link SafetensorsFile#read(NDManager, String)}.
     *
     * @param manager the manager that owns the result
     * @param name the tensor name
     * @return the tensor
     * @throws IOException if reading fails
     */
    public NDArray read(NDManager manager, String name) throws IOException {
        return file(name).read(manager, name);
    }

    /**
     * Reads elements {@code [from, to)} of a tensor; see {@link SafetensorsFile#read(NDManager,
     * String, long, long)}.
     *
     * @param manager the manager that owns the result
     * @param name the tensor name
     * @param from the first element
     * @param to one past the last element
     * @return a 1-D array
     * @throws IOException if reading fails
     */
    public NDArray read(NDManager manager, String name, long from, long to) throws IOException {
        return file(name).read(manager, name, from, to);
    }

    /**
     * Maps the raw bytes of elements {@code [from, to)} of a tensor; see {@link
     * SafetensorsFile#map(String, long, long)}.
     *
     * @param name the tensor name
     * @param from the first element
     * @param to one past the last element
     * @return a read-only little-endian buffer
     * @throws IOException if mapping fails
     */
    public ByteBuffer map(String name, long from, long to) throws IOException {
        return file(name).map(name, from, to);
    }

    /** {@inheritDoc} */
    @Override
    public void close() throws IOException {
        for (SafetensorsFile file : files) {
            file.close();
        }
    }

    private SafetensorsFile file(String name) {
        SafetensorsFile file = byName.get(name);
        if (file == null) {
            throw new IllegalArgumentException(
                    "the checkpoint has no tensor named \"" + name + '"');
        }
        return file;
    }
}
