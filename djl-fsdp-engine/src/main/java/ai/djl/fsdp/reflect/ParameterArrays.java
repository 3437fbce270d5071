package ai.djl.fsdp.reflect;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.lang.reflect.Field;

/**
 * Replaces the array a DJL {@link Parameter} holds.
 *
 * <p>{@link Parameter#setArray} refuses a parameter that has one, yet sharding must free each
 * parameter's full array (or memory would not shrink) while the parameter stays initialized, since
 * DJL re-initializes a block in training whose parameters have no array.
 */
public final class ParameterArrays {

    private static final Field ARRAY = arrayField();

    private ParameterArrays() {}

    /**
     * Makes {@code parameter} hold {@code array} and closes the array it held before, if any.
     *
     * @param parameter the parameter, initialized or not
     * @param array its new array
     */
    public static void replace(Parameter parameter, NDArray array) {
        NDArray previous = parameter.isInitialized() ? parameter.getArray() : null;
        try {
            ARRAY.set(parameter, array);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("Cannot set the array of parameter " + parameter, e);
        }
        array.setName(parameter.getName());
        if (previous != null && previous != array) {
            previous.close();
        }
    }

    /**
     * Frees {@code parameter}'s array, leaving an empty placeholder of its type: the parameter
     * stays initialized in DJL's sense, and its values live elsewhere (in FSDP shards).
     *
     * @param parameter an initialized parameter
     */
    public static void release(Parameter parameter) {
        NDArray array = parameter.getArray();
        replace(parameter, array.getManager().create(new Shape(0), array.getDataType()));
    }

    private static Field arrayField() {
        try {
            Field field = Parameter.class.getDeclaredField("array");
            field.setAccessible(true);
            return field;
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(
                    "This DJL version's Parameter has no 'array' field; djl-fsdp needs DJL 0.35");
        }
    }
}
