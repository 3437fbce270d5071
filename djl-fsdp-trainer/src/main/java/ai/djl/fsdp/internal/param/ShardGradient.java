package ai.djl.fsdp.internal.param;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.tensor.memory.PinnedMemory;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The gradient accumulated for one trainable shard over the micro-batches of a step, kept beside
 * the shard (on its device, pinned when it is copied from a GPU at every step) and made at the
 * first gradient.
 */
final class ShardGradient implements AutoCloseable {

    private final NDManager manager;
    private final Shape shape;
    private final DataType dataType;
    private final boolean pin;
    private NDArray array;
    private PinnedMemory pinned;

    /**
     * Whether {@link #array} holds an earlier step's values, cleared by {@link #zero} without
     * touching them: the step's first gradient replaces them (taken, or copied over them), and
     * {@link #get} fills them with zeros only if none came.
     */
    private boolean cleared;

    /**
     * Creates an empty accumulator.
     *
     * @param manager the shard's manager, on the shard's device
     * @param shape the shard's shape
     * @param dataType the parameters' type
     * @param pin whether to pin the gradient (a host gradient of a GPU rank)
     */
    ShardGradient(NDManager manager, Shape shape, DataType dataType, boolean pin) {
        this.manager = manager;
        this.shape = shape;
        this.dataType = dataType;
        this.pin = pin;
    }

    /** Returns the accumulated gradient, zeros if none has come yet. */
    NDArray get() {
        if (array == null) {
            array = manager.zeros(shape, dataType);
            if (pin) {
                pinned = PinnedMemory.pin(array);
            }
        } else if (cleared) {
            // The zero is made in a scratch manager so no scalar is left behind in the state.
            try (NDManager scratch = manager.newSubManager()) {
                array.set(new NDIndex("..."), scratch.zeros(new Shape(), array.getDataType()));
            }
        }
        cleared = false;
        return array;
    }

    /**
     * Adds {@code shardGradient} times {@code scale}, copying it to the shard's device first. The
     * step's first gradient may be kept as the accumulator itself (see {@link #first}).
     *
     * @param shardGradient scaled in place unless scale is 1; a copy to the shard's device is made
     *     in its manager
     * @param scale the factor
     */
    void accumulate(NDArray shardGradient, float scale) {
        if (scale != 1f) {
            ScalarOps.muli(shardGradient, scale);
        }
        NDArray local = Precision.toDevice(shardGradient, manager.getDevice(), false);
        if (local != shardGradient) {
            local.attach(shardGradient.getManager());
        }
        if (array == null || cleared) {
            first(local);
        } else {
            get().addi(local);
        }
    }

    /**
     * Takes the step's first gradient: it becomes the accumulator itself when it has the shard's
     * shape and type, is contiguous and is not to be pinned (its memory is the reduction's output,
     * which nothing else reads), and the last step's is freed; otherwise it is copied over the last
     * step's, one copy, not a fill and a sum.
     */
    private void first(NDArray local) {
        if (!pin
                && local.getShape().equals(shape)
                && local.getDataType() == dataType
                && TensorMemory.isContiguous(local)) {
            NDArray previous = array;
            local.attach(manager);
            array = local;
            if (previous != null) {
                previous.close();
            }
        } else {
            TensorMemory.copy(local, array == null ? get() : array);
        }
        cleared = false;
    }

    /**
     * Sets the gradient to zero, keeping its memory until the next gradient replaces it; Inf and
     * NaN become zero too. The memory is written only when it is next read (see {@link #cleared}).
     */
    void zero() {
        cleared = array != null;
    }

    /** Returns the bytes the gradient holds: 0 before the first gradient. */
    long getBytes() {
        return array == null ? 0 : array.size() * array.getDataType().getNumOfBytes();
    }

    /** Unregisters pinned memory; the array itself is freed with the shard's manager. */
    @Override
    public void close() {
        if (pinned != null) {
            pinned.close();
            pinned = null;
        }
    }
}
