package ai.djl.fsdp.param;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.Work;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Parameters of one unit, all trainable or all frozen, laid end to end in one 1-D buffer padded to
 * a multiple of the shard count; this rank keeps one contiguous shard of it, and the shard's
 * accumulated gradient, in a manager of its own. The gathered full buffer lives in a scope that
 * {@link #reshard()} closes.
 */
public final class FlatParameter implements AutoCloseable {

    private final String id;
    private final boolean trainable;
    private final List<Parameter> parameters;
    private final long[] offsets;
    private final long numel;
    private final long paddedNumel;
    private final int shardCount;
    private final NDManager stateManager;
    private final NDArray shard;
    private NDArray gradient;

    private NDManager gatherScope;
    private NDArray full;
    private Work pendingGather;

    private FlatParameter(
            String id,
            boolean trainable,
            List<Parameter> parameters,
            int shardCount,
            int shardIndex,
            NDManager parentManager,
            ProcessGroup syncFrom,
            ParameterSource source) {
        this.id = id;
        this.trainable = trainable;
        this.parameters = List.copyOf(parameters);
        this.shardCount = shardCount;
        offsets = new long[parameters.size()];
        long total = 0;
        DataType dataType = parameters.get(0).getArray().getDataType();
        for (int i = 0; i < parameters.size(); i++) {
            Parameter parameter = parameters.get(i);
            if (parameter.getArray().getDataType() != dataType) {
                throw new IllegalArgumentException(
                        "Parameters of one flat buffer must share a data type: "
                                + parameter.getName()
                                + " is "
                                + parameter.getArray().getDataType()
                                + ", "
                                + parameters.get(0).getName()
                                + " is "
                                + dataType
                                + ". Cast the model to one type before training.");
            }
            offsets[i] = total;
            total += parameter.getShape().size();
        }
        numel = total;
        paddedNumel = (total + shardCount - 1) / shardCount * shardCount;
        stateManager = parentManager.newSubManager(parameters.get(0).getArray().getDevice());
        stateManager.setName("fsdp-state-" + id);
        long shardNumel = paddedNumel / shardCount;
        long start = shardIndex * shardNumel;
        if (source != null) {
            shard = readShard(source, start, shardNumel, dataType);
            return;
        }
        try (NDManager scratch = stateManager.newSubManager()) {
            NDList pieces = new NDList();
            for (Parameter parameter : parameters) {
                NDArray detached = parameter.getArray().stopGradient();
                detached.attach(scratch);
                pieces.add(detached.flatten());
            }
            if (paddedNumel > numel) {
                pieces.add(scratch.zeros(new Shape(paddedNumel - numel), dataType));
            }
            NDArray flat = pieces.size() == 1 ? pieces.head() : NDArrays.concat(pieces);
            flat.attach(scratch);
            if (syncFrom != null) {
                syncFrom.broadcast(flat, 0);
            }
            shard = flat.get(new NDIndex("{}:{}", start, start + shardNumel)).duplicate();
            shard.attach(stateManager);
        }
    }

    /**
     * Builds this rank's shard, elements {@code [start, start + numel)} of the padded buffer, from
     * the pieces of the parameters that overlap it, each read from {@code source} alone.
     */
    private NDArray readShard(ParameterSource source, long start, long numel, DataType dataType) {
        NDArray built = stateManager.zeros(new Shape(numel), dataType);
        for (int i = 0; i < parameters.size(); i++) {
            Parameter parameter = parameters.get(i);
            long from = Math.max(start, offsets[i]);
            long to = Math.min(start + numel, offsets[i] + parameter.getShape().size());
            if (from >= to) {
                continue;
            }
            try (NDManager scratch = stateManager.newSubManager()) {
                NDArray piece = source.read(scratch, parameter, from - offsets[i], to - offsets[i]);
                if (piece == null) {
                    piece =
                            parameter
                                    .getArray()
                                    .stopGradient()
                                    .flatten()
                                    .get(new NDIndex("{}:{}", from - offsets[i], to - offsets[i]));
                    piece.attach(scratch);
                }
                if (piece.size() != to - from) {
                    throw new IllegalStateException(
                            "The parameter source gave "
                                    + piece.size()
                                    + " elements of "
                                    + parameter.getName()
                                    + " for the range ["
                                    + (from - offsets[i])
                                    + ", "
                                    + (to - offsets[i])
                                    + ")");
                }
                built.set(
                        new NDIndex("{}:{}", from - start, to - start),
                        piece.toType(dataType, false));
            } catch (IOException e) {
                throw new UncheckedIOException(
                        "Cannot read the shard of parameter " + parameter.getName(), e);
            }
        }
        return built;
    }

    /**
     * Flattens {@code parameters} into a new flat parameter split in {@code shardCount} pieces, of
     * which this rank keeps piece {@code shardIndex}. The parameters keep their arrays; see {@link
     * #releaseParameterArrays()}.
     *
     * <p>Without a {@code source}, the shard is cut from the parameters' own arrays (after rank 0's
     * values are broadcast over {@code syncFrom}, when given). With a {@code source}, this rank's
     * shard is read from it: only the elements of the shard are read, and the parameters' own
     * arrays only for the parameters the source does not hold; {@code syncFrom} is then ignored.
     *
     * @param id a name unique in the model; the optimizer keys the shard's state by it
     * @param trainable whether the parameters receive gradients
     * @param parameters the parameters, of one data type and device: initialized, or with arrays of
     *     their shape when a {@code source} is given
     * @param shardCount how many pieces the buffer is split in (1 for no sharding)
     * @param shardIndex the piece this rank keeps
     * @param parentManager the manager the shard's own manager is made under
     * @param syncFrom when not null (and no source is given), rank 0's values are broadcast over
     *     this group first
     * @param source when not null, where the values are read from
     * @return the flat parameter
     */
    public static FlatParameter create(
            String id,
            boolean trainable,
            List<Parameter> parameters,
            int shardCount,
            int shardIndex,
            NDManager parentManager,
            ProcessGroup syncFrom,
            ParameterSource source) {
        if (parameters.isEmpty()) {
            throw new IllegalArgumentException("A flat parameter needs parameters: " + id);
        }
        return new FlatParameter(
                id,
                trainable,
                parameters,
                shardCount,
                shardIndex,
                parentManager,
                source == null ? syncFrom : null,
                source);
    }

    /**
     * Frees the parameters' own full arrays, leaving each an empty placeholder: from now on the
     * shard is the only copy, and blocks read the parameters through the FSDP parameter store.
     */
    public void releaseParameterArrays() {
        for (Parameter parameter : parameters) {
            NDArray array = parameter.getArray();
            ParameterArrays.replace(
                    parameter, array.getManager().create(new Shape(0), array.getDataType()));
        }
    }

    /**
     * Gathers the full buffer and gives every parameter its own full array again, as before
     * sharding. Every rank must call it (it is a collective when the buffer is sharded).
     *
     * @param group the group the shards are spread over
     */
    public void restoreParameterArrays(ProcessGroup group) {
        startGather(group);
        List<NDArray> views = viewsOf(getFull());
        for (int i = 0; i < parameters.size(); i++) {
            Parameter parameter = parameters.get(i);
            NDArray array = views.get(i).duplicate();
            array.attach(parameter.getArray().getManager());
            if (trainable) {
                array.setRequiresGradient(true);
            }
            ParameterArrays.replace(parameter, array);
        }
        reshard();
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

    /** Returns the number of elements of the parameters, without padding. */
    public long getNumel() {
        return numel;
    }

    /** Returns the number of elements of the padded full buffer. */
    public long getPaddedNumel() {
        return paddedNumel;
    }

    /** Returns whether the buffer is split over several ranks (else the shard is all of it). */
    public boolean isSharded() {
        return shardCount > 1;
    }

    /** Returns this rank's shard; the optimizer updates it in place. */
    public NDArray getShard() {
        return shard;
    }

    /**
     * Starts gathering the full buffer if it is neither gathered nor on its way. With one shard the
     * shard is the full buffer and nothing moves.
     *
     * @param group the group the shards are spread over
     */
    public void startGather(ProcessGroup group) {
        if (shardCount == 1 || full != null) {
            return;
        }
        gatherScope = stateManager.getParentManager().newSubManager(shard.getDevice());
        gatherScope.setName("fsdp-gather-" + id);
        full = gatherScope.create(new Shape(paddedNumel), shard.getDataType());
        pendingGather = group.allGatherAsync(shard, full);
    }

    /** Waits for the gather started by {@link #startGather}. */
    public void awaitGather() {
        if (pendingGather != null) {
            pendingGather.await();
            pendingGather = null;
        }
    }

    /** Returns the gathered full buffer. */
    public NDArray getFull() {
        if (shardCount == 1) {
            return shard;
        }
        if (full == null) {
            throw new IllegalStateException("Flat parameter " + id + " is not gathered");
        }
        awaitGather();
        return full;
    }

    /**
     * Returns each parameter's view into {@code base}, a full buffer or a leaf sharing its storage.
     *
     * @param base a 1-D array of the padded full size
     * @return the views, in parameter order
     */
    public List<NDArray> viewsOf(NDArray base) {
        List<NDArray> views = new ArrayList<>(parameters.size());
        for (int i = 0; i < parameters.size(); i++) {
            Shape shape = parameters.get(i).getShape();
            views.add(
                    base.get(new NDIndex("{}:{}", offsets[i], offsets[i] + shape.size()))
                            .reshape(shape));
        }
        return views;
    }

    /** Frees the gathered full buffer; with one shard there is nothing to free. */
    public void reshard() {
        if (shardCount == 1 || full == null) {
            return;
        }
        awaitGather();
        gatherScope.close();
        gatherScope = null;
        full = null;
    }

    /**
     * Adds {@code shardGradient} times {@code scale} to the shard's accumulated gradient.
     *
     * @param shardGradient a gradient for this rank's shard; it is scaled in place (unless scale is
     *     1)
     * @param scale the factor
     */
    public void accumulateGradient(NDArray shardGradient, float scale) {
        if (scale != 1f) {
            shardGradient.muli(scale);
        }
        getGradient().addi(shardGradient);
    }

    /** Returns the shard's accumulated gradient, zeros if none has come yet. */
    public NDArray getGradient() {
        if (gradient == null) {
            gradient = stateManager.zeros(shard.getShape(), shard.getDataType());
        }
        return gradient;
    }

    /** Sets the accumulated gradient to zero, keeping its memory; Inf and NaN become zero too. */
    public void zeroGradient() {
        if (gradient != null) {
            // The zero is made in a scratch manager so no scalar is left behind in the state.
            try (NDManager scratch = stateManager.newSubManager()) {
                NDArray zero = scratch.zeros(new Shape(), gradient.getDataType());
                gradient.set(new NDIndex("..."), zero);
            }
        }
    }

    /** Returns the bytes of this rank's shard. */
    public long shardBytes() {
        return shard.size() * shard.getDataType().getNumOfBytes();
    }

    /** Returns the bytes of this rank's accumulated gradient. */
    public long gradientBytes() {
        return gradient == null ? 0 : gradient.size() * gradient.getDataType().getNumOfBytes();
    }

    @Override
    public void close() {
        reshard();
        stateManager.close();
    }
}
