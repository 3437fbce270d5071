package ai.djl.fsdp.safetensors;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.Map;
import java.util.Set;

/**
 * A safetensors file opened for reading: the header is parsed and checked once, and tensor data is
 * memory-mapped on demand, so a caller can read a few tensors, or a range of elements of one tensor
 * (a rank's shard), without touching the rest of the file.
 *
 * <p>The format: an 8-byte little-endian header length {@code N}, {@code N} bytes of JSON mapping
 * each tensor name to {@code {"dtype", "shape", "data_offsets": [begin, end]}} (offsets relative to
 * the data section that follows the header) and an optional {@code "__metadata__"} object of
 * strings, then the data, little-endian and row-major.
 */
public final class SafetensorsFile implements AutoCloseable {

    /** The reference implementation refuses headers above 100 MB; so do we. */
    static final long MAX_HEADER_BYTES = 100L << 20;

    static final String METADATA_KEY = "__metadata__";

    private final Path path;
    private final FileChannel channel;
    private final long dataStart;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;

    private SafetensorsFile(
            Path path,
            FileChannel channel,
            long dataStart,
            Map<String, TensorInfo> tensors,
            Map<String, String> metadata) {
        this.path = path;
        this.channel = channel;
        this.dataStart = dataStart;
        this.tensors = tensors;
        this.metadata = metadata;
    }

    /**
     * Opens a safetensors file and validates its header.
     *
     * @param path the file
     * @return the opened file; close it when done
     * @throws IOException if the file cannot be read
     * @throws SafetensorsException if the header is corrupt or inconsistent with the file size
     */
    public static SafetensorsFile open(Path path) throws IOException {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        try {
            long size = channel.size();
            if (size < 8) {
                throw corrupt(
                        path,
                        "it is " + size + " bytes long, shorter than the 8-byte header length");
            }
            ByteBuffer lengthBytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(path, channel, lengthBytes, 0);
            long headerLength = lengthBytes.getLong(0);
            if (headerLength <= 0 || headerLength > size - 8 || headerLength > MAX_HEADER_BYTES) {
                throw corrupt(
                        path,
                        "its header length "
                                + Long.toUnsignedString(headerLength)
                                + " does not fit the file of "
                                + size
                                + " bytes");
            }
            ByteBuffer header = ByteBuffer.allocate((int) headerLength);
            readFully(path, channel, header, 8);
            String json = new String(header.array(), StandardCharsets.UTF_8);
            long dataStart = 8 + headerLength;
            SafetensorsHeader parsed = SafetensorsHeader.parse(path, json, size - dataStart);
            return new SafetensorsFile(
                    path,
                    channel,
                    dataStart,
                    Collections.unmodifiableMap(parsed.tensors()),
                    Collections.unmodifiableMap(parsed.metadata()));
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Returns the file this reads.
     *
     * @return the path
     */
    public Path getPath() {
        return path;
    }

    /**
     * Returns the names of the tensors, in header order.
     *
     * @return the tensor names
     */
    public Set<String> getNames() {
        return tensors.keySet();
    }

    /**
     * Returns the {@code __metadata__} strings of the header (empty if there are none).
     *
     * @return the metadata
     */
    public Map<String, String> getMetadata() {
        return metadata;
    }

    /**
     * Returns whether the file holds a tensor.
     *
     * @param name the tensor name
     * @return true if present
     */
    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    /**
     * Returns a tensor's header entry.
     *
     * @param name the tensor name
     * @return its dtype, shape and offsets
     * @throws IllegalArgumentException if the file has no such tensor
     */
    public TensorInfo info(String name) {
        TensorInfo info = tensors.get(name);
        if (info == null) {
            throw new IllegalArgumentException("no tensor named \"" + name + "\" in " + path);
        }
        return info;
    }

    /**
     * Memory-maps the raw little-endian bytes of elements {@code [from, to)} of a tensor, counted
     * in row-major order. Nothing is copied: the buffer reads the file.
     *
     * @param name the tensor name
     * @param from the first element
     * @param to one past the last element
     * @return a read-only little-endian buffer of {@code (to - from) * dtype.bytes()} bytes
     * @throws IOException if mapping fails
     */
    public ByteBuffer map(String name, long from, long to) throws IOException {
        TensorInfo info = info(name);
        if (from < 0 || from > to || to > info.elements()) {
            throw new IndexOutOfBoundsException(
                    "elements ["
                            + from
                            + ", "
                            + to
                            + ") are outside tensor \""
                            + name
                            + "\" of "
                            + info.elements()
                            + " elements");
        }
        long bytes = (to - from) * info.dtype().bytes();
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "cannot map "
                            + bytes
                            + " bytes of \""
                            + name
                            + "\" at once (2 GiB at most): read it in ranges");
        }
        long position = dataStart + info.begin() + from * info.dtype().bytes();
        return channel.map(FileChannel.MapMode.READ_ONLY, position, bytes)
                .order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Reads a whole tensor into an NDArray of {@link Dtype#readableAs()} type (bfloat16 is widened
     * to float32).
     *
     * @param manager the manager that owns the result
     * @param name the tensor name
     * @return the tensor, with its shape
     * @throws IOException if reading fails
     */
    public NDArray read(NDManager manager, String name) throws IOException {
        TensorInfo info = info(name);
        return read(manager, name, 0, info.elements()).reshape(info.shape());
    }

    /**
     * Reads elements {@code [from, to)} of a tensor, counted in row-major order, into a 1-D NDArray
     * of {@link Dtype#readableAs()} type. Only those bytes of the file are touched: this is how a
     * rank loads just its shard.
     *
     * @param manager the manager that owns the result
     * @param name the tensor name
     * @param from the first element
     * @param to one past the last element
     * @return a 1-D array of {@code to - from} elements
     * @throws IOException if reading fails
     */
    public NDArray read(NDManager manager, String name, long from, long to) throws IOException {
        Dtype dtype = info(name).dtype();
        ByteBuffer mapped = map(name, from, to);
        Shape shape = new Shape(to - from);
        if (dtype == Dtype.BF16) {
            return OwnedArrays.create(manager, widenBf16(mapped.asShortBuffer()), shape);
        }
        // A heap copy, so that nothing aliases the mapping, moved into libtorch's memory: the
        // reshaped view read(manager, name) returns must not borrow Java memory (see OwnedArrays).
        ByteBuffer copy = ByteBuffer.allocate(mapped.remaining()).order(ByteOrder.nativeOrder());
        copy.put(mapped).flip();
        DataType type = dtype.readableAs();
        return OwnedArrays.create(manager, copy, shape, type);
    }

    /**
     * Widens bfloat16 values to float32: a bfloat16 is the top half of a float32's bits, so the
     * conversion is exact.
     */
    static float[] widenBf16(ShortBuffer bf16) {
        float[] out = new float[bf16.remaining()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Float.intBitsToFloat((bf16.get() & 0xFFFF) << 16);
        }
        return out;
    }

    /** {@inheritDoc} */
    @Override
    public void close() throws IOException {
        channel.close();
    }

    private static void readFully(Path path, FileChannel channel, ByteBuffer buffer, long position)
            throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, at);
            if (n < 0) {
                throw corrupt(path, "it ended while being read");
            }
            at += n;
        }
    }

    private static SafetensorsException corrupt(Path path, String problem) {
        return SafetensorsHeader.corrupt(path, problem);
    }
}
