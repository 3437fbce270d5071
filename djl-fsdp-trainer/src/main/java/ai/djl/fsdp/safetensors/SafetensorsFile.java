package ai.djl.fsdp.safetensors;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.Map;
import java.util.Set;

/**
 * A safetensors file opened for reading: the header is parsed and checked once, and tensor data is
 * read (or memory-mapped) on demand, so a caller can read a few tensors, or a range of elements of
 * one tensor (a rank's shard), without touching the rest of the file.
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
        long position = position(name, info, from, to);
        long bytes = (to - from) * info.dtype().bytes();
        return channel.map(FileChannel.MapMode.READ_ONLY, position, bytes)
                .order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Checks a range of a tensor's elements, of at most 2 GiB (one Java buffer), and returns where
     * its bytes begin in the file.
     */
    private long position(String name, TensorInfo info, long from, long to) {
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
                    "cannot read "
                            + bytes
                            + " bytes of \""
                            + name
                            + "\" at once (2 GiB at most): read it in ranges");
        }
        return dataStart + info.begin() + from * info.dtype().bytes();
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
        TensorInfo info = info(name);
        long position = position(name, info, from, to);
        Shape shape = new Shape(to - from);
        // Straight from the file into memory libtorch owns, on the CPU: no mapping for the garbage
        // collector to unmap, no copy on the Java heap or in a direct buffer. Each of those is
        // freed only when the collector runs, so a checkpoint read piece by piece (a resume) left
        // them behind by the hundreds of megabytes. The bytes are little-endian, as the hosts
        // libtorch runs on.
        try (NDManager cpu = manager.newSubManager(Device.cpu())) {
            NDArray stored =
                    info.dtype() == Dtype.BF16
                            ? Precision.BFLOAT16.empty(cpu, shape)
                            : cpu.create(shape, info.dtype().readableAs());
            readFully(path, channel, TensorMemory.hostBuffer(stored, "tensor read"), position);
            NDArray result =
                    Precision.toDevice(
                            Precision.cast(stored, info.dtype().readableAs()),
                            manager.getDevice(),
                            false);
            result.attach(manager);
            return result;
        }
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
