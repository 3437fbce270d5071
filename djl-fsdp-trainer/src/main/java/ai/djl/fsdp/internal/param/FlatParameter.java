package ai.djl.fsdp.internal.param;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.memory.ReleasableMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import java.util.List;

/**
 * The storage of one flat buffer of parameters, all trainable or all frozen, laid out by a {@link
 * FlatLayout}: this rank's shard and its accumulated gradient ({@code ShardGradient}), kept in a
 * manager of their own, and the gathered full buffer while there is one ({@code FullBuffer}). It
 * neither reads files nor talks to other ranks: shards are made by the {@code checkpoint} package
 * and gathered by the runtime's collectives.
 *
 * <p>The shard is usually kept in the parameters' own type ({@link #getDataType}). A frozen buffer
 * may be kept narrower (bfloat16 under bfloat16 mixed precision, see {@code
 * FsdpConfig.Builder#optFrozenInComputePrecision}): it is then gathered in that type as it is, and
 * cast back to the parameters' type only where whole parameters are handed out or saved.
 *
 * <p>The shard and its gradient live on the shard's device; the full buffer on the compute device,
 * the device of the manager the flat parameter is made under. With CPU offload the two differ (the
 * shard on the host, pinned when the compute device is a GPU): the shard is {@link #isStaged()
 * staged}, copied to the compute device for each gather ({@link #shardIn}) without the host waiting
 * ({@code StagedShard}), and gradients are copied back to the host as they are accumulated, the
 * host waiting (the host optimizer reads them next). On a CPU-only rank both are the CPU and
 * nothing is copied.
 */
public final class FlatParameter implements AutoCloseable {

    private final String id;
    private final boolean trainable;
    private final List<Parameter> parameters;
    private final DataType dataType;
    private final FlatLayout layout;
    private final int shardIndex;
    private final NDManager stateManager;
    private final NDArray shard;
    private final Device computeDevice;
    private final StagedShard staged;
    private final ShardGradient gradient;

    private FullBuffer full;
    private NDManager sendBuffers;

    /**
     * Keeps {@code shard} as this rank's piece of the buffer of {@code parameters}.
     *
     * @param id a name unique in the model: the unit's dotted path and whether it trains; the
     *     optimizer keys the shard's state by it
     * @param trainable whether the parameters receive gradients
     * @param parameters the parameters, in buffer order
     * @param layout where each parameter lies
     * @param shardIndex the piece this rank keeps
     * @param shard the piece's values, {@code layout.getShardNumel()} elements, in the parameters'
     *     type or (frozen buffers only) a narrower floating type; moved into the flat parameter's
     *     own manager
     * @param parentManager the manager the flat parameter's own manager is made under, on the
     *     compute device (where the full buffer is gathered)
     */
    public FlatParameter(
            String id,
            boolean trainable,
            List<Parameter> parameters,
            FlatLayout layout,
            int shardIndex,
            NDArray shard,
            NDManager parentManager) {
        if (shard.size() != layout.getShardNumel()) {
            throw new IllegalArgumentException(
                    "The shard of "
                            + id
                            + " has "
                            + shard.size()
                            + " elements; its layout needs "
                            + layout.getShardNumel());
        }
        dataType = parameters.get(0).getArray().getDataType();
        if (trainable
                && Precision.ofArray(shard) != Precision.ofArray(parameters.get(0).getArray())) {
            throw new IllegalArgumentException(
                    "The shard of trainable "
                            + id
                            + " must keep its parameters' type "
                            + dataType
                            + " (the optimizer's master copy)");
        }
        this.id = id;
        this.trainable = trainable;
        this.parameters = List.copyOf(parameters);
        this.layout = layout;
        this.shardIndex = shardIndex;
        stateManager = parentManager.newSubManager(shard.getDevice());
        stateManager.setName("fsdp-state-" + id);
        shard.attach(stateManager);
        this.shard = shard;
        computeDevice = parentManager.getDevice();
        // A host shard and gradient copied to or from a GPU at every step are pinned.
        boolean pin = isStaged() && computeDevice.isGpu();
        staged = isStaged() ? new StagedShard(shard, computeDevice) : null;
        gradient =
                trainable ? new ShardGradient(stateManager, shard.getShape(), dataType, pin) : null;
    }

    /** Returns the name the optimizer keys this shard's state by. */
    public String getId() {
        return id;
    }

    /** Returns whether the parameters receive gradients. */
    public boolean isTrainable() {
        return trainable;
    }

    /** Returns the parameters, in buffer order. */
    public List<Parameter> getParameters() {
        return parameters;
    }

    /**
     * Returns the parameters' own element type: the type they are handed out, saved and loaded in,
     * whatever the shard is stored in.
     */
    public DataType getDataType() {
        return dataType;
    }

    /**
     * Returns the type the shard is stored in: the parameters' own, or (frozen buffers) a narrower
     * one; bfloat16 included, so hand it only to {@link Precision}, never to DJL.
     */
    public DataType getStorageType() {
        Precision precision = Precision.ofArray(shard);
        return precision == null ? shard.getDataType() : precision.getDataType();
    }

    /** Returns where each parameter lies in the buffer and in the shards. */
    public FlatLayout getLayout() {
        return layout;
    }

    /** Returns the index of the shard this rank keeps. */
    public int getShardIndex() {
        return shardIndex;
    }

    /**
     * Returns whether the buffer holds integer codes (a 4-bit base's packed bytes and 8-bit scale
     * codes) rather than floating-point values: such a buffer is gathered as it is stored, never
     * cast, and no graph ever holds it (its values are decoded into new arrays).
     */
    public boolean isPacked() {
        return !Precision.isFloating(shard);
    }

    /** Returns whether the buffer is split over several ranks (else the shard is all of it). */
    public boolean isSharded() {
        return layout.getShardCount() > 1;
    }

    /**
     * Returns whether the shard lives on another device than the one the full buffer is computed on
     * (CPU offload to a GPU rank): it is copied there for each gather.
     */
    public boolean isStaged() {
        return !shard.getDevice().equals(computeDevice);
    }

    /**
     * Returns whether computing needs a full buffer apart from the shard: when the buffer is split,
     * or when the shard is staged (a buffer that is neither is its own full buffer).
     */
    public boolean needsGather() {
        return isSharded() || isStaged();
    }

    /** Returns this rank's shard, to read; {@link #getShardToWrite} to update it in place. */
    public NDArray getShard() {
        return shard;
    }

    /** Returns this rank's shard once no copy to the compute device reads it: to write it. */
    public NDArray getShardToWrite() {
        if (staged != null) {
            staged.awaitCopies();
        }
        return shard;
    }

    /**
     * Allocates the full buffer for a gather to fill, or returns the one already there (also when
     * it was {@link #releaseFull released}: its addresses are backed again here, before the gather
     * that refills them is queued).
     *
     * @param precision the element type of the full buffer; a buffer that is not split, or that is
     *     {@link #isPacked packed}, keeps the shard's type
     * @param releasable whether a new buffer goes into {@link ReleasableMemory} (never a packed
     *     one: no graph holds it, so it is freed rather than released)
     * @return the full buffer, {@code layout.getPaddedNumel()} elements, contents undefined (the
     *     shard's values for a staged buffer that is not split: that copy is its gather)
     * @throws IllegalStateException if a full buffer of another type is there
     */
    public NDArray allocateFull(Precision precision, boolean releasable) {
        if (!needsGather()) {
            return shard;
        }
        if (full == null) {
            NDManager scope = stateManager.getParentManager().newSubManager(computeDevice);
            scope.setName("fsdp-gather-" + id);
            if (!isSharded()) {
                full = FullBuffer.copyOf(scope, staged);
            } else if (isPacked()) {
                full = FullBuffer.allocate(scope, layout.getPaddedNumel(), shard.getDataType());
            } else {
                full = FullBuffer.allocate(scope, layout.getPaddedNumel(), precision, releasable);
            }
        } else if (isSharded() && !isPacked() && Precision.ofArray(full.array()) != precision) {
            throw new IllegalStateException(
                    "Flat parameter " + id + " is gathered in " + Precision.ofArray(full.array()));
        } else {
            full.restore();
        }
        return full.array();
    }

    /**
     * Returns this rank's shard in {@code precision} on the compute device: the shard itself, or a
     * copy (the send buffer of a gather in that type; a staged shard's copy is queued without the
     * host waiting) kept in a manager of its own until {@link #releaseSendBuffers}.
     *
     * @param precision the element type
     * @return the shard's values in that type
     */
    public NDArray shardIn(Precision precision) {
        NDManager fullScope = allocateFull(precision, isFullReleasable()).getManager();
        if (staged == null && (isPacked() || Precision.ofArray(shard) == precision)) {
            return shard;
        }
        if (sendBuffers == null) {
            // Under the full buffer's manager: freeing the full buffer frees them too.
            sendBuffers = fullScope.newSubManager();
            sendBuffers.setName("fsdp-send-" + id);
        }
        NDArray copy = staged == null ? shard : staged.copyTo(sendBuffers);
        NDArray cast = isPacked() ? copy : precision.cast(copy);
        if (cast != shard) {
            cast.attach(sendBuffers);
        }
        return cast;
    }

    /**
     * Frees the send buffers {@link #shardIn} made, once the gather reading them has completed (on
     * a GPU: once the current stream waits for it; its allocator frees in stream order).
     */
    public void releaseSendBuffers() {
        if (sendBuffers != null) {
            sendBuffers.close();
            sendBuffers = null;
        }
    }

    /** Returns whether a full buffer exists (always, when the buffer needs no gather). */
    public boolean hasFull() {
        return !needsGather() || full != null;
    }

    /** Returns the full buffer; its contents are whole once the gather into it has completed. */
    public NDArray getFull() {
        if (!hasFull()) {
            throw new IllegalStateException("Flat parameter " + id + " is not gathered");
        }
        return needsGather() ? full.array() : shard;
    }

    /** Returns whether the full buffer lives in releasable memory. */
    public boolean isFullReleasable() {
        return full != null && full.isReleasable();
    }

    /**
     * Gives the physical memory of a releasable full buffer back, keeping its addresses (and the
     * tensors and graphs over them) until a gather refills them: host pages read as zeros, GPU
     * memory is unmapped once the current stream has finished reading it.
     *
     * @throws IllegalStateException if the full buffer is not in releasable memory
     */
    public void releaseFull() {
        if (!isFullReleasable()) {
            throw new IllegalStateException(
                    "Flat parameter " + id + " has no full buffer in releasable memory");
        }
        full.release();
    }

    /**
     * Returns how many bytes of the full buffer occupy physical memory: all of an ordinary one, the
     * physical memory backing a releasable one, 0 without one.
     */
    public long getFullResidentBytes() {
        return full == null ? 0 : full.getResidentBytes();
    }

    /**
     * Frees the full buffer; with one shard there is nothing to free. Releasable memory is
     * unmapped: no tensor, view or graph over it may be used afterwards.
     */
    public void freeFull() {
        releaseSendBuffers();
        if (full != null) {
            full.close();
            full = null;
        }
    }

    /**
     * Adds {@code shardGradient} times {@code scale} to the shard's accumulated gradient, copying
     * it to the shard's device first when it is staged.
     *
     * @param shardGradient a gradient for this rank's shard, in memory of its own (a collective's
     *     output, a fresh array: not a slice of a larger one); scaled in place unless scale is 1; a
     *     copy to the shard's device is made in its manager. The step's first gradient may be kept
     *     as the accumulated gradient itself, moved into the shard's manager: the caller must not
     *     close, reuse or write it afterwards
     * @param scale the factor
     */
    public void accumulateGradient(NDArray shardGradient, float scale) {
        gradient().accumulate(shardGradient, scale);
    }

    /**
     * Returns the shard's accumulated gradient, zeros if none has come yet.
     *
     * @throws IllegalStateException for frozen parameters, which have none
     */
    public NDArray getGradient() {
        return gradient().get();
    }

    private ShardGradient gradient() {
        if (gradient == null) {
            throw new IllegalStateException("Flat parameter " + id + " is frozen: no gradient");
        }
        return gradient;
    }

    /**
     * Sets the accumulated gradient to zero; Inf and NaN become zero too. Its memory is kept until
     * the next step's first gradient replaces it.
     */
    public void zeroGradient() {
        if (gradient != null) {
            gradient.zero();
        }
    }

    /** Returns the bytes of this rank's shard, as stored. */
    public long getShardBytes() {
        return shard.size() * getStorageType().getNumOfBytes();
    }

    /** Returns the bytes of this rank's accumulated gradient. */
    public long getGradientBytes() {
        return gradient == null ? 0 : gradient.getBytes();
    }

    @Override
    public void close() {
        freeFull();
        // Registered memory is unregistered before it is freed.
        if (gradient != null) {
            gradient.close();
        }
        if (staged != null) {
            staged.close();
        }
        stateManager.close();
    }
}
