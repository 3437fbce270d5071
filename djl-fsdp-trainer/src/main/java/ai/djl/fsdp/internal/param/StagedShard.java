package ai.djl.fsdp.internal.param;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.memory.HostToDeviceCopy;
import ai.djl.fsdp.tensor.memory.PinnedMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;

/**
 * A shard kept on another device than the one it is computed on (CPU offload of a GPU rank: the
 * shard on the host, pinned) and copied there for every gather.
 *
 * <p>From pinned memory the copy is queued on the GPU's current stream without the host waiting
 * ({@link HostToDeviceCopy}), into a device buffer in the full buffer's manager, which frees it
 * with the full buffer: the cast and the all-gather queued after it (the NCCL group orders its
 * stream after the caller's current stream with an event) read the copied values, and the host goes
 * on to queue the unit's compute. The host shard must not change while a copy still reads it:
 * {@link #awaitCopies} waits for the last copy queued (copies share the current stream, so the
 * earlier ones are done by then), and {@code FlatParameter.getShardToWrite} calls it before the
 * shard is written (the optimizer's in-place step, a checkpoint load). Unpinned (no CUDA runtime)
 * or on the CPU, the copy blocks as before.
 */
final class StagedShard implements AutoCloseable {

    private final NDArray shard;
    private final Device device;
    private final PinnedMemory pinned;
    private HostToDeviceCopy lastCopy;

    /**
     * Stages {@code shard} for {@code device}, pinning it when that is a GPU.
     *
     * @param shard the shard, on the host
     * @param device the compute device
     */
    StagedShard(NDArray shard, Device device) {
        this.shard = shard;
        this.device = device;
        pinned = device.isGpu() ? PinnedMemory.pin(shard) : null;
    }

    /**
     * Returns a copy of the shard on the compute device, owned by {@code scope}; its values are
     * there for whatever is queued after it on the current stream.
     *
     * @param scope a manager on the compute device
     * @return the copy
     */
    NDArray copyTo(NDManager scope) {
        Precision precision = Precision.ofArray(shard);
        if (pinned == null || !pinned.isPinned() || precision == null) {
            NDArray copy = Precision.toDevice(shard, device, true);
            copy.attach(scope);
            return copy;
        }
        NDArray copy = precision.empty(scope, shard.getShape());
        HostToDeviceCopy started = HostToDeviceCopy.start(shard, copy);
        if (lastCopy != null) {
            lastCopy.close();
        }
        lastCopy = started;
        return copy;
    }

    /** Waits until no copy queued so far reads the host shard: it may be written afterwards. */
    void awaitCopies() {
        if (lastCopy != null) {
            lastCopy.await();
            lastCopy.close();
            lastCopy = null;
        }
    }

    /** Waits for the copies and unpins the shard; call it before the shard is freed. */
    @Override
    public void close() {
        awaitCopies();
        if (pinned != null) {
            pinned.close();
        }
    }
}
