package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.nn.Parameter;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.annotations.SerializedName;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a sharded checkpoint holds, independent of the number of ranks that wrote it: every tensor's
 * global name, element type and shape, and which elements of its row-major flattening lie in which
 * file, under which key and at which bytes. Parameters are named by their dotted names; an
 * optimizer's state by {@code optimizer.<kind>.<parameter name>}.
 */
public final class CheckpointMetadata {

    /** The value of {@code format}. */
    public static final String FORMAT = "djl-fsdp-sharded-checkpoint";

    /** The prefix of an optimizer state tensor's name. */
    public static final String OPTIMIZER_PREFIX = "optimizer.";

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().create();

    /** One tensor: its type and shape, and its chunks in file order. */
    public static final class Tensor {
        String dtype;
        long[] shape;
        List<Chunk> chunks = new ArrayList<>();

        /** Returns the element type, as safetensors names it. */
        public String getDtype() {
            return dtype;
        }

        /** Returns the shape. */
        public long[] getShape() {
            return shape;
        }

        /** Returns where the elements lie, in element order. */
        public List<Chunk> getChunks() {
            return chunks;
        }
    }

    /** Elements {@code [elements[0], elements[1])} of a tensor, stored in one file. */
    public static final class Chunk {
        String file;
        String key;
        long[] elements;
        long[] bytes;

        /** Returns the file, relative to the checkpoint directory. */
        public String getFile() {
            return file;
        }

        /** Returns the tensor's key in that safetensors file. */
        public String getKey() {
            return key;
        }

        /** Returns the first element, in the tensor's flattening. */
        public long getFrom() {
            return elements[0];
        }

        /** Returns one past the last element. */
        public long getTo() {
            return elements[1];
        }
    }

    String format = FORMAT;
    int version = 1;

    @SerializedName("world_size")
    int worldSize;

    @SerializedName("optimizer_state")
    List<String> optimizerKinds = new ArrayList<>();

    Map<String, Tensor> tensors = new LinkedHashMap<>();

    /** Returns the number of ranks that wrote the checkpoint. */
    public int getWorldSize() {
        return worldSize;
    }

    /** Returns the kinds of optimizer state saved with the trainable parameters. */
    public List<String> getOptimizerKinds() {
        return optimizerKinds;
    }

    /** Returns the tensors by name. */
    public Map<String, Tensor> getTensors() {
        return tensors;
    }

    /**
     * Describes what the ranks write for these flat parameters: each writing rank's shard of each
     * parameter, and of each optimizer state in {@code optimizerKinds} for trainable ones.
     *
     * <p>The buffers, whole on every rank, are written whole by rank 0 into its file.
     *
     * @param flats the model's flat parameters
     * @param buffers the model's buffers
     * @param names each parameter's dotted name
     * @param optimizerKinds the optimizer's state kinds
     * @return the metadata, without byte ranges (see {@link #locateBytes})
     */
    public static CheckpointMetadata describe(
            List<FlatParameter> flats,
            List<Parameter> buffers,
            Map<Parameter, String> names,
            List<String> optimizerKinds) {
        CheckpointMetadata metadata = new CheckpointMetadata();
        metadata.optimizerKinds = new ArrayList<>(optimizerKinds);
        for (FlatParameter flat : flats) {
            FlatLayout layout = flat.getLayout();
            metadata.worldSize = Math.max(metadata.worldSize, layout.getShardCount());
            List<String> prefixes = new ArrayList<>();
            prefixes.add("");
            if (flat.isTrainable()) {
                optimizerKinds.forEach(kind -> prefixes.add(OPTIMIZER_PREFIX + kind + "."));
            }
            for (int i = 0; i < layout.getParameterCount(); i++) {
                String name = names.get(flat.getParameters().get(i));
                for (String prefix : prefixes) {
                    Tensor tensor = new Tensor();
                    // The parameter in its shard's stored type (a frozen base in bfloat16 stays
                    // bfloat16); its optimizer state in the parameter's own.
                    tensor.dtype =
                            (prefix.isEmpty()
                                            ? Dtype.ofArray(flat.getShard())
                                            : Dtype.of(flat.getDataType()))
                                    .name();
                    tensor.shape = layout.getShape(i).getShape();
                    for (int shard = 0; shard < layout.getShardCount(); shard++) {
                        FlatLayout.Overlap overlap = layout.overlap(i, shard);
                        if (overlap != null) {
                            Chunk chunk = new Chunk();
                            chunk.file =
                                    CheckpointDirectory.shardFile(shard, layout.getShardCount());
                            chunk.key = prefix + name;
                            chunk.elements = new long[] {overlap.from(), overlap.to()};
                            tensor.chunks.add(chunk);
                        }
                    }
                    metadata.tensors.put(prefix + name, tensor);
                }
            }
        }
        int shardCount = Math.max(metadata.worldSize, 1);
        for (Parameter buffer : buffers) {
            Tensor tensor = new Tensor();
            tensor.dtype = Dtype.of(buffer.getArray().getDataType()).name();
            tensor.shape = buffer.getShape().getShape();
            Chunk chunk = new Chunk();
            chunk.file = CheckpointDirectory.shardFile(0, shardCount);
            chunk.key = names.get(buffer);
            chunk.elements = new long[] {0, buffer.getShape().size()};
            tensor.chunks.add(chunk);
            metadata.tensors.put(chunk.key, tensor);
        }
        return metadata;
    }

    /**
     * Fills in each chunk's absolute byte range from the written files' safetensors headers.
     *
     * @param directory the checkpoint directory holding the files
     * @throws IOException if a file cannot be read
     */
    public void locateBytes(Path directory) throws IOException {
        Map<String, Map<String, long[]>> offsetsByFile = new LinkedHashMap<>();
        for (Tensor tensor : tensors.values()) {
            for (Chunk chunk : tensor.chunks) {
                Map<String, long[]> offsets =
                        offsetsByFile.computeIfAbsent(chunk.file, file -> new LinkedHashMap<>());
                if (offsets.isEmpty()) {
                    readOffsets(directory.resolve(chunk.file), offsets);
                }
                chunk.bytes = offsets.get(chunk.key);
            }
        }
    }

    private static void readOffsets(Path file, Map<String, long[]> offsets) throws IOException {
        try (FileChannel channel = FileChannel.open(file);
                ai.djl.fsdp.safetensors.SafetensorsFile tensors =
                        ai.djl.fsdp.safetensors.SafetensorsFile.open(file)) {
            ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            channel.read(length, 0);
            long dataStart = 8 + length.flip().getLong();
            for (String name : tensors.getNames()) {
                var info = tensors.info(name);
                offsets.put(name, new long[] {dataStart + info.begin(), dataStart + info.end()});
            }
        }
    }

    /**
     * Writes the metadata as JSON.
     *
     * @return the JSON text
     */
    public String toJson() {
        return GSON.toJson(this);
    }

    /**
     * Reads a checkpoint's metadata file.
     *
     * @param directory the checkpoint directory
     * @return the metadata
     * @throws IOException if the file is missing, unreadable or not this format
     */
    public static CheckpointMetadata read(Path directory) throws IOException {
        Path file = directory.resolve(CheckpointDirectory.METADATA);
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new IOException(
                    file + " is missing: " + directory + " is not a complete sharded checkpoint",
                    e);
        }
        CheckpointMetadata metadata;
        try {
            metadata = GSON.fromJson(text, CheckpointMetadata.class);
        } catch (JsonParseException e) {
            throw new IOException(
                    file + " is not valid checkpoint metadata (truncated or corrupt JSON)", e);
        }
        if (metadata == null
                || !FORMAT.equals(metadata.format)
                || metadata.tensors == null
                || metadata.optimizerKinds == null) {
            throw new IOException(file + " is not " + FORMAT + " metadata");
        }
        for (Map.Entry<String, Tensor> entry : metadata.tensors.entrySet()) {
            Tensor tensor = entry.getValue();
            if (tensor == null || tensor.shape == null || tensor.chunks == null) {
                throw new IOException(file + ": tensor " + entry.getKey() + " lacks its shape");
            }
            for (Chunk chunk : tensor.chunks) {
                if (chunk.file == null
                        || chunk.key == null
                        || chunk.elements == null
                        || chunk.elements.length != 2
                        || chunk.elements[0] < 0
                        || chunk.elements[1] < chunk.elements[0]
                        || chunk.file.contains("/")
                        || chunk.file.contains("\\")) {
                    throw new IOException(
                            file + ": tensor " + entry.getKey() + " has a malformed chunk");
                }
            }
        }
        return metadata;
    }
}
