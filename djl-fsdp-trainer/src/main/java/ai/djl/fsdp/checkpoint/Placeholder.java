package ai.djl.fsdp.checkpoint;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;

/**
 * Gives a parameter memory of its shape and type but no values (uninitialized memory, which costs
 * nothing until it is written): for a parameter whose shard the {@link ShardLoader} fills from
 * another rank's values, so that this rank neither draws values nor computes anything from them (a
 * 4-bit layer does not quantize a placeholder). Such an array must not be read.
 */
public final class Placeholder implements Initializer {

    /** The one placeholder initializer. */
    public static final Placeholder INSTANCE = new Placeholder();

    private Placeholder() {}

    @Override
    public NDArray initialize(NDManager manager, Shape shape, DataType dataType) {
        return manager.create(shape, dataType);
    }

    /**
     * Returns whether {@code parameter} is to be given a placeholder rather than values.
     *
     * @param parameter a parameter
     * @return whether its initializer is the placeholder
     */
    public static boolean isPlaceholder(Parameter parameter) {
        return parameter.getInitializer() == INSTANCE;
    }
}
