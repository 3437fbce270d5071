package ai.djl.fsdp.tensor;

import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.Set;

/**
 * Measures the state a DJL {@link Optimizer} keeps for some parameter ids.
 *
 * <p>DJL optimizers keep their state (momentum, Adam's moments) in fields of type {@code
 * Map<String, Map<Device, NDArray>>} keyed by parameter id, detached from every manager, and expose
 * no accessor; reading those fields is the only way to account for it.
 */
public final class OptimizerStates {

    private OptimizerStates() {}

    /**
     * Returns the bytes of the arrays {@code optimizer} keeps for the given ids.
     *
     * @param optimizer the optimizer
     * @param ids the parameter ids to count
     * @return the bytes
     */
    public static long bytes(Optimizer optimizer, Set<String> ids) {
        long bytes = 0;
        for (Class<?> type = optimizer.getClass();
                type != Object.class;
                type = type.getSuperclass()) {
            for (Field field : type.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())
                        || !Map.class.isAssignableFrom(field.getType())) {
                    continue;
                }
                bytes += bytes(read(field, optimizer), ids);
            }
        }
        return bytes;
    }

    private static long bytes(Map<?, ?> state, Set<String> ids) {
        long bytes = 0;
        for (Map.Entry<?, ?> entry : state.entrySet()) {
            if (!ids.contains(entry.getKey()) || !(entry.getValue() instanceof Map)) {
                continue;
            }
            for (Object value : ((Map<?, ?>) entry.getValue()).values()) {
                if (value instanceof NDArray && !((NDArray) value).isReleased()) {
                    NDArray array = (NDArray) value;
                    bytes += array.size() * array.getDataType().getNumOfBytes();
                }
            }
        }
        return bytes;
    }

    private static Map<?, ?> read(Field field, Optimizer optimizer) {
        try {
            field.setAccessible(true);
            Object value = field.get(optimizer);
            return value instanceof Map ? (Map<?, ?>) value : Map.of();
        } catch (IllegalAccessException | RuntimeException e) {
            // A field the module system keeps closed holds no state of ours.
            return Map.of();
        }
    }
}
