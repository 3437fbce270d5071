package ai.djl.fsdp.reflect;

import ai.djl.nn.norm.BatchNorm;
import java.lang.reflect.Field;

/**
 * The settings of a DJL {@code BatchNorm}: the axis of its channels, its epsilon and its momentum
 * (DJL's meaning: the weight of the old running value).
 *
 * <p>Why reflection: {@code BatchNorm} keeps them in private fields with no getters, and FSDP's
 * synchronized batch statistics must normalize exactly as the block it stands in for would.
 *
 * @param axis the channel axis, as given to the builder (may be negative)
 * @param epsilon what is added to the variance
 * @param momentum the running statistics' {@code running = momentum * running + (1 - momentum) *
 *     batch}
 */
public record BatchNormSettings(int axis, float epsilon, float momentum) {

    /**
     * Reads the settings of {@code block}.
     *
     * @param block a DJL {@code BatchNorm}
     * @return its settings
     * @throws IllegalStateException if DJL's fields are not where this version expects them
     */
    public static BatchNormSettings of(BatchNorm block) {
        try {
            return new BatchNormSettings(
                    field("axis").getInt(block),
                    field("epsilon").getFloat(block),
                    field("momentum").getFloat(block));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(
                    "Cannot read the settings of DJL's BatchNorm (axis, epsilon, momentum) in this"
                            + " DJL version",
                    e);
        }
    }

    private static Field field(String name) throws NoSuchFieldException {
        Field field = BatchNorm.class.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }

    /**
     * Returns the channel axis of an input with {@code dimensions} axes, counted from 0.
     *
     * @param dimensions the input's number of axes
     * @return the axis
     * @throws IllegalArgumentException if the input has no such axis
     */
    public int axisOf(int dimensions) {
        int resolved = axis < 0 ? axis + dimensions : axis;
        if (resolved < 0 || resolved >= dimensions) {
            throw new IllegalArgumentException(
                    "BatchNorm's axis "
                            + axis
                            + " does not exist in an input of "
                            + dimensions
                            + " axes");
        }
        return resolved;
    }
}
