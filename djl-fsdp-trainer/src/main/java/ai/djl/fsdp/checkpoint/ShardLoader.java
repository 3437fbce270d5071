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
 * (after rank 0's values are broadcast, when asked) or from a {@link ParameterSource}, of which
 * only the shard's elements are read. Frozen shards can be stored in a narrower floating type
 * (bfloat16): each rank's elements are cast into it piece by piece, so no whole float32 copy of
 * them is ever held.
 */
public final class ShardLoader {

    /** The most elements read from a source at once: 16 MiB of float32. */
    static final long PIECE = 1L << 22;

    private final int shardCount;
    private final int shardIndex;
    private final NDManager manager;
    private final ProcessGroup syncFrom;
    private final ParameterSource source;
    private final Precision frozenStorage;
    private final Device storageDevice;

    /**
     * Creates a loader that keeps every shard in its parameters' type.
     *
     * @param shardCount how many pieces each buffer is split in (1 for no sharding)
     * @param shardIndex the piece this rank keeps
     * @param manager the manager the flat parameters' own managers are made under
     * @param syncFrom when not null (and there is no source), rank 0's values are broadcast over
     *     this group first
     * @param source when not null, where the values are read from (every rank reads the same
     *     values, so nothing is broadcast)
     */
    public ShardLoader(
            int shardCount,
            int shardIndex,
            NDManager manager,
            ProcessGroup syncFrom,
            ParameterSource source) {
        this(shardCount, shardIndex, manager, syncFrom, source, null, null);
    }

    /**
     * Creates a loader that may keep frozen shards narrower and the shards on another device.
     *
     * @param shardCount how many pieces each buffer is split in (1 for no sharding)
     * @param shardIndex the piece this rank keeps
     * @param manager the manager the flat parameters' own managers are made under
     * @param syncFrom when not null (and there is no source), rank 0's values are broadcast over
     *     this group first
     * @param source when not null, where the values are read from (every rank reads the same
     *     values, so nothing is broadcast)
     * @param frozenStorage the type frozen floating-point shards are stored in, or null for their
     *     parameters' own type; trainable shards always keep their parameters' type
     * @param storageDevice where the shards are kept (the CPU for offload), or null for the
     *     parameters' device
     */
    public ShardLoader(
            int shardCount,
            int shardIndex,
            NDManager manager,
            ProcessGroup syncFrom,
            ParameterSource source,
            Precision frozenStorage,
            Device storageDevice) {
        this.frozenStorage = frozenStorage;
        this.storageDevice = storageDevice;
        this.shardCount = shardCount;
        this.shardIndex = shardIndex;
        this.manager = manager;
        this.syncFrom = source == null ? syncFrom : null;
        this.source = source;
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
            if (syncFrom != null) {
                // Rank 0's values, one parameter at a time, into the parameters' own arrays.
                for (Parameter parameter : parameters) {
                    syncFrom.broadcast(parameter.getArray(), 0);
                }
            }
            // Straight into the shard's type, piece by piece: no flat copy of the whole buffer.
            NDArray shard =
                    readShard(
                            layout,
                            parameters,
                            shardIndex,
                            storage,
                            source != null ? source : (m, parameter, from, to) -> null,
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
