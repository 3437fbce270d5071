package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.initializer.NormalInitializer;
import java.util.HashMap;
import java.util.Map;

/**
 * Fresh values of large frozen parameters (a model's embedding and head), drawn a piece of rows at
 * a time and kept in the narrower type frozen shards are stored in (bfloat16), so that no rank
 * holds such a parameter whole in float32: the parameter itself gets a {@link Placeholder}, and the
 * {@link ShardLoader} reads its values from here.
 *
 * <p>Only DJL's {@link NormalInitializer} is drawn this way, in float32: libtorch fills a float32
 * normal tensor with one uniform draw an element, transforms each run of 16 in place, and draws the
 * last 16 again where the size is not a multiple of 16. Pieces whose sizes are multiples of 16, the
 * last at least 16 long, therefore hold the values of the whole draw, bit for bit, and each is
 * rounded to the storage type as the whole would be.
 */
public final class PiecewiseDraws implements ParameterSource, AutoCloseable {

    /** The run libtorch transforms at once. */
    private static final long RUN = 16;

    private final Precision storage;
    private final Map<String, NDArray> drawn = new HashMap<>();

    /**
     * Creates an empty store.
     *
     * @param storage the type frozen shards are stored in, narrower than float32
     */
    public PiecewiseDraws(Precision storage) {
        this.storage = storage;
    }

    /**
     * Returns whether {@code parameter} is drawn here when it is initialized: frozen, with a {@link
     * NormalInitializer}, of more than {@link ShardLoader#PIECE} elements.
     *
     * @param parameter a parameter, not initialized
     * @return whether it is drawn in pieces
     */
    public boolean draws(Parameter parameter) {
        Shape shape = parameter.getShape();
        return !parameter.requiresGradient()
                && parameter.getInitializer() instanceof NormalInitializer
                && shape != null
                && shape.dimension() >= 1
                && shape.size() > ShardLoader.PIECE;
    }

    /**
     * Returns the initializer that draws {@code parameter}'s values here, in pieces, with its own
     * initializer, and gives the parameter a placeholder.
     *
     * @param parameter a parameter this store {@link #draws}
     * @return the initializer to give it while the model initializes
     */
    public Initializer initializer(Parameter parameter) {
        Initializer own = parameter.getInitializer();
        return (manager, shape, dataType) -> {
            if (dataType != DataType.FLOAT32) {
                return own.initialize(manager, shape, dataType);
            }
            drawn.put(parameter.getId(), draw(own, manager, shape));
            return Placeholder.INSTANCE.initialize(manager, shape, dataType);
        };
    }

    private NDArray draw(Initializer own, NDManager manager, Shape shape) {
        long rows = shape.get(0);
        long row = shape.size() / rows;
        // Rows a piece: about ShardLoader.PIECE elements, a whole number of runs.
        long unit = RUN / gcd(row, RUN);
        long step = Math.max(unit, ShardLoader.PIECE / row / unit * unit);
        NDArray values = storage.zeros(manager, shape);
        for (long from = 0; from < rows; ) {
            long to = Math.min(rows, from + step);
            if ((rows - to) * row < RUN) {
                to = rows;
            }
            long[] pieceShape = shape.getShape().clone();
            pieceShape[0] = to - from;
            try (NDArray piece = own.initialize(manager, new Shape(pieceShape), DataType.FLOAT32);
                    NDArray narrow = storage.cast(piece)) {
                values.set(new NDIndex("{}:{}", from, to), narrow);
            }
            from = to;
        }
        return values;
    }

    private static long gcd(long a, long b) {
        return b == 0 ? a : gcd(b, a % b);
    }

    @Override
    public NDArray read(NDManager manager, Parameter parameter, long from, long to) {
        NDArray values = drawn.get(parameter.getId());
        if (values == null) {
            return null;
        }
        NDArray flat = values.reshape(-1);
        flat.attach(manager);
        NDArray piece = flat.get(new NDIndex("{}:{}", from, to));
        piece.attach(manager);
        return piece;
    }

    /**
     * Frees the values drawn for {@code parameter}, once its shard holds them.
     *
     * @param parameter a parameter
     */
    public void release(Parameter parameter) {
        NDArray values = drawn.remove(parameter.getId());
        if (values != null) {
            values.close();
        }
    }

    /** Frees every value still held. */
    @Override
    public void close() {
        drawn.values().forEach(NDArray::close);
        drawn.clear();
    }
}
