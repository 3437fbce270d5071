package ai.djl.fsdp.safetensors;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Collects tensors and writes them as a safetensors file, or as a checkpoint directory sharded the
 * way Hugging Face shards ({@code model-00001-of-00002.safetensors} plus {@code
 * model.safetensors.index.json}). Every file is written atomically (see {@link AtomicFiles}).
 *
 * <pre>{@code
 * new SafetensorsWriter().add("wte.weight", wte).putMetadata("format", "pt").write(path);
 * }</pre>
 *
 * <p>A file too large to hold in memory at once is streamed instead: {@link #declare} every
 * tensor's name, type and shape (which fixes the header and every tensor's offset), then {@link
 * #stream} opens the file and takes each tensor's bytes as they become available, in any order.
 */
public final class SafetensorsWriter {

    /** A tensor's description, and its bytes unless it was only declared. */
    private record Entry(Dtype dtype, Shape shape, ByteBuffer bytes) {

        long byteSize() {
            return shape.size() * dtype.bytes();
        }
    }

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
        return add(name, Dtype.of(array.getDataType()), array.getShape(), littleEndian(array));
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
    public SafetensorsWriter add(
            String name, Dtype dtype, Shape shape, ByteBuffer littleEndianBytes) {
        checkSize(name, dtype, shape, littleEndianBytes);
        return put(name, new Entry(dtype, shape, littleEndianBytes.slice()));
    }

    /**
     * Declares a tensor whose bytes {@link #stream} takes later.
     *
     * @param name the tensor name
     * @param dtype the element type
     * @param shape the shape
     * @return this writer
     */
    public SafetensorsWriter declare(String name, Dtype dtype, Shape shape) {
        return put(name, new Entry(dtype, shape, null));
    }

    private SafetensorsWriter put(String name, Entry entry) {
        if (name.equals(SafetensorsFile.METADATA_KEY)) {
            throw new IllegalArgumentException(name + " is reserved for metadata");
        }
        if (tensors.containsKey(name)) {
            throw new IllegalArgumentException("tensor \"" + name + "\" was added twice");
        }
        tensors.put(name, entry);
        return this;
    }

    private static void checkSize(String name, Dtype dtype, Shape shape, ByteBuffer bytes) {
        long expected = shape.size() * dtype.bytes();
        if (bytes.remaining() != expected) {
            throw new IllegalArgumentException(
                    "tensor \""
                            + name
                            + "\" of "
                            + shape
                            + " "
                            + dtype
                            + " needs "
                            + expected
                            + " bytes, got "
                            + bytes.remaining());
        }
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
     * model.safetensors.index.json} mapping each tensor to its shard. Once they are in place, the
     * files of the other layout an earlier save left there are removed ({@link
     * CheckpointShards#removeStale}).
     *
     * @param directory the checkpoint directory
     * @param maxShardBytes the most tensor bytes one shard holds (a larger single tensor gets a
     *     shard of its own)
     * @throws IOException if writing fails
     */
    public void writeCheckpoint(Path directory, long maxShardBytes) throws IOException {
        CheckpointShards.write(this, directory, maxShardBytes);
    }

    /** Returns each tensor's name and byte size, in the order they were added. */
    Map<String, Long> byteSizes() {
        Map<String, Long> sizes = new LinkedHashMap<>();
        tensors.forEach((name, entry) -> sizes.put(name, entry.byteSize()));
        return sizes;
    }

    /**
     * Opens a safetensors file of every tensor added or declared, for their bytes to be written as
     * they become available. The header is written now; the file appears at {@code path} only when
     * {@link StreamingFile#commit()} finds every tensor written.
     *
     * @param path the file to create or replace
     * @return the open file
     * @throws IOException if it cannot be created
     */
    public StreamingFile stream(Path path) throws IOException {
        List<String> names = new ArrayList<>(tensors.keySet());
        Header header = header(names);
        AtomicFiles.Pending pending = AtomicFiles.open(path);
        StreamingFile stream = new StreamingFile(pending, header);
        try {
            AtomicFiles.writeFully(pending.channel(), header.bytes());
            for (String name : names) {
                ByteBuffer bytes = tensors.get(name).bytes();
                if (bytes != null) {
                    stream.write(name, bytes.duplicate());
                }
            }
        } catch (IOException | RuntimeException e) {
            stream.close();
            throw e;
        }
        return stream;
    }

    void write(Path path, List<String> names) throws IOException {
        Header header = header(names);
        AtomicFiles.write(
                path,
                channel -> {
                    AtomicFiles.writeFully(channel, header.bytes());
                    for (String name : names) {
                        ByteBuffer bytes = tensors.get(name).bytes();
                        if (bytes == null) {
                            throw new IllegalStateException(
                                    "tensor \""
                                            + name
                                            + "\" was only declared: stream() the file"
                                            + " to write its bytes when they are known");
                        }
                        AtomicFiles.writeFully(channel, bytes.duplicate());
                    }
                });
    }

    /** The encoded header of a file and where each tensor's bytes start in the file. */
    private record Header(ByteBuffer bytes, Map<String, Long> fileOffsets) {}

    private Header header(List<String> names) {
        JsonObject header = new JsonObject();
        if (!metadata.isEmpty()) {
            JsonObject meta = new JsonObject();
            metadata.forEach(meta::addProperty);
            header.add(SafetensorsFile.METADATA_KEY, meta);
        }
        Map<String, Long> dataOffsets = new LinkedHashMap<>();
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
            dataOffsets.put(name, offset);
            offset += entry.byteSize();
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
        Map<String, Long> fileOffsets = new LinkedHashMap<>();
        dataOffsets.forEach((name, at) -> fileOffsets.put(name, 8L + padded + at));
        return new Header(head, fileOffsets);
    }

    /**
     * A safetensors file being written tensor by tensor: its header is on disk, each tensor's bytes
     * go to their place as they arrive, and {@link #commit()} publishes the file once every tensor
     * is written. Closing without a commit deletes it.
     */
    public final class StreamingFile implements AutoCloseable {

        private final AtomicFiles.Pending pending;
        private final Header header;
        private final Set<String> missing;

        private StreamingFile(AtomicFiles.Pending pending, Header header) {
            this.pending = pending;
            this.header = header;
            this.missing = new LinkedHashSet<>(header.fileOffsets().keySet());
        }

        /**
         * Writes a declared tensor's values, stored with the type it was declared with.
         *
         * @param name the tensor name
         * @param array its values, of the declared shape and element type
         * @return this stream
         * @throws IOException if writing fails
         */
        public StreamingFile write(String name, NDArray array) throws IOException {
            Entry entry = declared(name);
            if (Dtype.ofArray(array) != entry.dtype() || !array.getShape().equals(entry.shape())) {
                throw new IllegalArgumentException(
                        "tensor \""
                                + name
                                + "\" was declared "
                                + entry.shape()
                                + " "
                                + entry.dtype()
                                + " but is "
                                + array.getShape()
                                + " "
                                + array.getDataType());
            }
            return writeMemory(name, array);
        }

        /**
         * Writes a declared tensor's bytes from an array of bytes, whatever type the tensor was
         * declared with: bytes that another type labels, such as a 4-bit weight's packed codes
         * stored as bitsandbytes' storage type.
         *
         * @param name the tensor name
         * @param bytes a uint8 array of exactly the declared tensor's size in bytes
         * @return this stream
         * @throws IOException if writing fails
         */
        public StreamingFile writeBytes(String name, NDArray bytes) throws IOException {
            declared(name);
            if (bytes.getDataType() != DataType.UINT8) {
                throw new IllegalArgumentException(
                        "tensor \""
                                + name
                                + "\" takes its bytes as uint8, got "
                                + bytes.getDataType()
                                + ": hand over the tensor's bytes, or write its values");
            }
            return writeMemory(name, bytes);
        }

        private Entry declared(String name) {
            Entry entry = tensors.get(name);
            if (entry == null) {
                throw new IllegalArgumentException("tensor \"" + name + "\" was not declared");
            }
            return entry;
        }

        /** Writes an array's memory, through the host and contiguous, as the tensor's bytes. */
        private StreamingFile writeMemory(String name, NDArray array) throws IOException {
            if (!Device.Type.CPU.equals(array.getDevice().getDeviceType())) {
                // One tensor at a time through host memory.
                try (NDArray host = Precision.toDevice(array, Device.cpu(), true)) {
                    return writeMemory(name, host);
                }
            }
            if (TensorMemory.isContiguous(array)) {
                return write(name, hostBytes(array));
            }
            try (NDArray contiguous = array.flatten()) {
                return write(name, hostBytes(contiguous));
            }
        }

        private StreamingFile write(String name, ByteBuffer bytes) throws IOException {
            if (!missing.remove(name)) {
                throw new IllegalArgumentException("tensor \"" + name + "\" was already written");
            }
            checkSize(name, tensors.get(name).dtype(), tensors.get(name).shape(), bytes);
            long position = header.fileOffsets().get(name);
            while (bytes.hasRemaining()) {
                position += pending.channel().write(bytes, position);
            }
            return this;
        }

        /**
         * Publishes the file at its path.
         *
         * @throws IOException if writing fails
         * @throws IllegalStateException if some declared tensor was not written
         */
        public void commit() throws IOException {
            if (!missing.isEmpty()) {
                throw new IllegalStateException("tensors never written: " + missing);
            }
            pending.commit();
        }

        /** Deletes the file unless it was committed. */
        @Override
        public void close() throws IOException {
            pending.close();
        }
    }

    /**
     * The array's own memory, read in place: a streamed tensor is never copied into the Java heap
     * (a copy per tensor of a multi-gigabyte model piles up as garbage faster than it is
     * collected).
     */
    private static ByteBuffer hostBytes(NDArray array) {
        ByteBuffer bytes = TensorMemory.hostBuffer(array, "tensor written to safetensors");
        if (bytes.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException(
                    "safetensors is little-endian; this platform is not");
        }
        return bytes;
    }

    private static ByteBuffer littleEndian(NDArray array) {
        ByteBuffer bytes = array.toByteBuffer();
        if (bytes.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new UnsupportedOperationException(
                    "safetensors is little-endian; this platform is not");
        }
        return bytes;
    }
}
