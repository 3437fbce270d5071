package ai.djl.fsdp.checkpoint;

import ai.djl.Device;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
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
 * Makes a rank's flat parameter shards from the model's state: from the parameters' own arrays
 * (rank 0's, broadcast piece by piece, when asked) or from a {@link ParameterSource}, of which only
 * the shard's elements are read. Frozen shards can be stored in a narrower floating type
 * (bfloat16): each rank's elements are cast into it piece by piece, so no whole float32 copy of
 * them is ever held.
 */
public final class ShardLoader {

    /** The most elements read from a source at once: 16 MiB of float32. */
    static final long PIECE = 1L << 22;

    /** A source that holds nothing: every parameter is read from its own array. */
    private static final ParameterSource OWN_ARRAYS = (manager, parameter, from, to) -> null;

    private final int shardCount;
    private final int shardIndex;
    private final NDManager manager;
    private final ProcessGroup syncFrom;
    private final ParameterSource source;
    private final Precision frozenStorage;
    private final Device storageDevice;
    private final ParameterSource fresh;

    /**
     * Creates a loader that keeps every shard in its parameters' type.
     *
     * @param shardCount how many pieces each buffer is split in (1 for no sharding)
     * @param shardIndex the piece this rank keeps
     * @param manager the manager the flat parameters' own managers are made under
     * @param syncFrom when not null (and there is no source), every rank's shards are rank 0's
     *     values, broadcast over this group piece by piece
     * @param source when not null, where the values are read from (every rank reads the same
     *     values, so nothing is broadcast)
     */
    public ShardLoader(
            int shardCount,
            int shardIndex,
            NDManager manager,
            ProcessGroup syncFrom,
            ParameterSource source) {
        this(shardCount, shardIndex, manager, syncFrom, source, null, null, null);
    }

    /**
     * Creates a loader that may keep frozen shards narrower and the shards on another device.
     *
     * @param shardCount how many pieces each buffer is split in (1 for no sharding)
     * @param shardIndex the piece this rank keeps
     * @param manager the manager the flat parameters' own managers are made under
     * @param syncFrom when not null (and there is no source), every rank's shards are rank 0's
     *     values, broadcast over this group piece by piece
     * @param source when not null, where the values are read from (every rank reads the same
     *     values, so nothing is broadcast)
     * @param frozenStorage the type frozen floating-point shards are stored in, or null for their
     *     parameters' own type; trainable shards always keep their parameters' type
     * @param storageDevice where the shards are kept (the CPU for offload), or null for the
     *     parameters' device
     * @param fresh when not null, fresh values held apart from the parameters' arrays ({@link
     *     PiecewiseDraws}), read (on rank 0, when syncing) where it holds a parameter's values
     */
    public ShardLoader(
            int shardCount,
            int shardIndex,
            NDManager manager,
            ProcessGroup syncFrom,
            ParameterSource source,
            Precision frozenStorage,
            Device storageDevice,
            ParameterSource fresh) {
        this.frozenStorage = frozenStorage;
        this.storageDevice = storageDevice;
        this.shardCount = shardCount;
        this.shardIndex = shardIndex;
        this.manager = manager;
        this.syncFrom = source == null ? syncFrom : null;
        this.source = source;
        this.fresh = fresh == null ? OWN_ARRAYS : fresh;
    }

    /**
     * Returns whether this rank's shards are another rank's values (rank 0's, broadcast), so that
     * its parameters need hold no values of their own when they are loaded.
     *
     * @return whether the shards are received
     */
    public boolean receives() {
        return syncFrom != null && syncFrom.getRank() != 0;
    }

    /**
     * Lays out {@code parameters} in a flat buffer and loads this rank's shard of it.
     *
     * @param id the flat parameter's name (see {@link FlatParameter})
     * @param trainable whether the parameters receive gradients
     * @param parameters the parameters, of one data type and device: initialized, or with arrays of
     *     their shape when a source is given
     * @return the flat parameter
     */
    public FlatParameter load(String id, boolean trainable, List<Parameter> parameters) {
        DataType dataType = parameters.get(0).getArray().getDataType();
        List<Shape> shapes = new ArrayList<>(parameters.size());
        for (Parameter parameter : parameters) {
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
            shapes.add(parameter.getShape());
        }
        FlatLayout layout = new FlatLayout(shapes, shardCount);
        DataType storage =
                !trainable && frozenStorage != null && dataType.isFloating()
                        ? frozenStorage.getDataType()
                        : dataType;
        NDManager scratch = manager.newSubManager(parameters.get(0).getArray().getDevice());
        try {
            // Straight into the shard's type, piece by piece: no flat copy of the whole buffer.
            NDArray shard =
                    syncFrom != null
                            ? receiveShard(layout, parameters, storage, scratch)
                            : readShard(
                                    layout,
                                    parameters,
                                    shardIndex,
                                    storage,
                                    source != null ? source : fresh,
                                    scratch);
            if (storageDevice != null) {
                // The shard's owner takes it from the scratch manager.
                shard = Precision.toDevice(shard, storageDevice, false);
                shard.attach(scratch);
            }
            return new FlatParameter(id, trainable, parameters, layout, shardIndex, shard, manager);
        } finally {
            scratch.close();
        }
    }

    /**
     * Builds this rank's shard of rank 0's values: each parameter goes out from rank 0 in pieces of
     * at most {@link #PIECE} elements, and every rank keeps the part of each piece its shard holds.
     * Only rank 0's arrays are read, so another rank's may be placeholders that were never drawn
     * (uninitialized memory, never touched); no rank holds more of a parameter than one piece
     * beside its shard.
     */
    private NDArray receiveShard(
            FlatLayout layout, List<Parameter> parameters, DataType dataType, NDManager scratch) {
        boolean sends = syncFrom.getRank() == 0;
        NDArray built = zeros(scratch, new Shape(layout.getShardNumel()), dataType);
        for (int i = 0; i < parameters.size(); i++) {
            Parameter parameter = parameters.get(i);
            FlatLayout.Overlap overlap = layout.overlap(i, shardIndex);
            long numel = parameter.getShape().size();
            for (long from = 0; from < numel; from += PIECE) {
                long to = Math.min(numel, from + PIECE);
                try (NDManager pieceScope = scratch.newSubManager()) {
                    DataType type = parameter.getArray().getDataType();
                    NDArray piece =
                            sends
                                    ? Precision.cast(
                                                    readPiece(
                                                            fresh, pieceScope, parameter, from, to),
                                                    type)
                                            .duplicate()
                                    : zeros(pieceScope, new Shape(to - from), type);
                    syncFrom.broadcast(piece, 0);
                    long lo = overlap == null ? to : Math.max(from, overlap.from());
                    long hi = overlap == null ? to : Math.min(to, overlap.to());
                    if (lo < hi) {
                        long offset = overlap.shardOffset() + lo - overlap.from();
                        built.set(
                                new NDIndex("{}:{}", offset, offset + hi - lo),
                                Precision.cast(
                                        piece.get(new NDIndex("{}:{}", lo - from, hi - from)),
                                        dataType));
                    }
                }
            }
        }
        return built;
    }

    /**
     * Builds one shard of a flat buffer from the pieces of the parameters that overlap it, each
     * read from {@code source} alone (or from the parameter's own array when the source does not
     * hold it); padding is zero.
     *
     * @param layout the flat buffer's layout
     * @param parameters its parameters, in buffer order
     * @param shardIndex the shard to build
     * @param dataType the shard's element type, bfloat16 included (each piece is cast into it)
     * @param source where the values are read from
     * @param scratch the manager of the result
     * @return the shard, {@code layout.getShardNumel()} elements
     */
    public static NDArray readShard(
            FlatLayout layout,
            List<Parameter> parameters,
            int shardIndex,
            DataType dataType,
            ParameterSource source,
            NDManager scratch) {
        NDArray built = zeros(scratch, new Shape(layout.getShardNumel()), dataType);
        for (int i = 0; i < parameters.size(); i++) {
            Parameter parameter = parameters.get(i);
            FlatLayout.Overlap overlap = layout.overlap(i, shardIndex);
            if (overlap == null) {
                continue;
            }
            // In pieces of at most PIECE elements: a rank never holds a whole large tensor's
            // part (an embedding, say) twice while it copies it into the shard.
            for (long from = overlap.from(); from < overlap.to(); from += PIECE) {
                long to = Math.min(overlap.to(), from + PIECE);
                long offset = overlap.shardOffset() + from - overlap.from();
                try (NDManager pieceScope = scratch.newSubManager()) {
                    NDArray piece = readPiece(source, pieceScope, parameter, from, to);
                    built.set(
                            new NDIndex("{}:{}", offset, offset + piece.size()),
                            Precision.cast(piece, dataType));
                }
            }
        }
        return built;
    }

    /**
     * Reads elements {@code [from, to)} of {@code parameter} from {@code source}, or from its own
     * array when the source does not hold it.
     */
    private static NDArray readPiece(
            ParameterSource source, NDManager scope, Parameter parameter, long from, long to) {
        NDArray piece;
        try {
            piece = source.read(scope, parameter, from, to);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "Cannot read the shard of parameter " + parameter.getName(), e);
        }
        if (piece == null) {
            // Every intermediate in the scope: an alias left elsewhere keeps the whole array.
            NDArray alias = parameter.getArray().stopGradient();
            alias.attach(scope);
            NDArray flat = alias.flatten();
            flat.attach(scope);
            piece = flat.get(new NDIndex("{}:{}", from, to));
            piece.attach(scope);
        }
        if (piece.size() != to - from) {
            throw new IllegalStateException(
                    "The parameter source gave "
                            + piece.size()
                            + " elements of "
                            + parameter.getName()
                            + " for the range ["
                            + from
                            + ", "
                            + to
                            + ")");
        }
        return piece;
    }

    /** Zeros of any floating type, bfloat16 included, or of a type DJL creates. */
    private static NDArray zeros(NDManager manager, Shape shape, DataType dataType) {
        return dataType == DataType.BFLOAT16
                ? Precision.BFLOAT16.zeros(manager, shape)
                : manager.zeros(shape, Precision.djlType(dataType, "shard"));
    }
}
