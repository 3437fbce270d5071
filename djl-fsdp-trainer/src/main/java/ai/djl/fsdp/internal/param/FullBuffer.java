package ai.djl.fsdp.internal.param;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.memory.ReleasableMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The gathered full buffer of one flat parameter, in a manager of its own on the compute device
 * (under which the gather's send buffers have their own, freed once the gather is done): ordinary
 * memory, or {@link ReleasableMemory} (host pages or GPU physical memory) that can be given back
 * while graphs still refer to its addresses.
 */
final class FullBuffer implements AutoCloseable {

    private final NDManager scope;
    private final NDArray array;
    private final ReleasableMemory memory;

    private FullBuffer(NDManager scope, NDArray array, ReleasableMemory memory) {
        this.scope = scope;
        this.array = array;
        this.memory = memory;
    }

    /**
     * Allocates a buffer for a gather to fill, contents undefined.
     *
     * @param scope the buffer's own manager, on the compute device
     * @param numel the elements
     * @param precision the element type
     * @param releasable whether it goes into {@link ReleasableMemory} on the scope's device
     * @return the buffer
     */
    static FullBuffer allocate(
            NDManager scope, long numel, Precision precision, boolean releasable) {
        Shape shape = new Shape(numel);
        if (!releasable) {
            return new FullBuffer(scope, precision.empty(scope, shape), null);
        }
        ReleasableMemory memory =
                ReleasableMemory.allocate(scope.getDevice(), numel * precision.getBytes());
        return new FullBuffer(scope, memory.wrap(scope, shape, precision, 0), memory);
    }

    /**
     * Allocates an ordinary buffer of a DJL type for a gather to fill, contents undefined: a packed
     * buffer's (a 4-bit base's codes), gathered as stored and never cast or released.
     *
     * @param scope the buffer's own manager, on the compute device
     * @param numel the elements
     * @param type the element type, the shard's
     * @return the buffer
     */
    static FullBuffer allocate(NDManager scope, long numel, DataType type) {
        return new FullBuffer(scope, scope.create(new Shape(numel), type), null);
    }

    /**
     * Copies a whole (unsplit) staged shard to the compute device, bfloat16 included: the copy is
     * its gather.
     *
     * @param scope the buffer's own manager, on the compute device
     * @param shard the shard
     * @return the buffer
     */
    static FullBuffer copyOf(NDManager scope, StagedShard shard) {
        return new FullBuffer(scope, shard.copyTo(scope), null);
    }

    NDArray array() {
        return array;
    }

    boolean isReleasable() {
        return memory != null;
    }

    /** Gives a releasable buffer's physical memory back, keeping its addresses. */
    void release() {
        memory.release();
    }

    /**
     * Backs a released buffer's addresses again (a GPU maps fresh memory there; host pages come
     * back when written) before a gather writes them; nothing to do for an ordinary buffer.
     */
    void restore() {
        if (memory != null) {
            memory.restore();
        }
    }

    /** Returns the bytes that occupy physical memory. */
    long getResidentBytes() {
        if (memory != null) {
            return memory.getResidentBytes();
        }
        Precision precision = Precision.ofArray(array);
        long bytes = precision == null ? array.getDataType().getNumOfBytes() : precision.getBytes();
        return array.size() * bytes;
    }

    /** Frees the buffer (and any send buffers left); releasable memory is unmapped. */
    @Override
    public void close() {
        scope.close();
        if (memory != null) {
            memory.close();
        }
    }
}
