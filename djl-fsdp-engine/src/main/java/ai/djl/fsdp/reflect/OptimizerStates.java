package ai.djl.fsdp.reflect;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Reads and writes the state a DJL {@link Optimizer} keeps per parameter id: its arrays (SGD's
 * momentum, Adam's moments), by the name of the field that holds them ({@code momentumStates},
 * {@code means}, {@code variances}), and its update counts, which drive the bias correction and the
 * learning-rate schedule.
 *
 * <p>Why reflection: DJL optimizers keep that state in private fields ({@code Map<String,
 * Map<Device, NDArray>>} keyed by parameter id, detached from every manager; {@code Map<String,
 * Integer>} and {@code numUpdate} in {@code Optimizer}) and expose no accessor, so neither
 * accounting nor a checkpoint that resumes exactly can reach it otherwise.
 */
public final class OptimizerStates {

    private static final String UPDATE_COUNTS = "updateCounts";
    private static final String NUM_UPDATE = "numUpdate";

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
        for (String id : ids) {
            for (NDArray array : arrays(optimizer, id).values()) {
                bytes += array.size() * array.getDataType().getNumOfBytes();
            }
        }
        return bytes;
    }

    /**
     * Returns the arrays {@code optimizer} keeps for one parameter id, by the name of their field.
     *
     * @param optimizer the optimizer
     * @param id the parameter id
     * @return the arrays; empty before the optimizer's first update of the id
     */
    public static Map<String, NDArray> arrays(Optimizer optimizer, String id) {
        Map<String, NDArray> arrays = new LinkedHashMap<>();
        stateFields(optimizer)
                .forEach(
                        (name, state) -> {
                            Map<Device, NDArray> byDevice = state.get(id);
                            if (byDevice == null) {
                                return;
                            }
                            for (NDArray array : byDevice.values()) {
                                if (!array.isReleased()) {
                                    arrays.put(name, array);
                                }
                            }
                        });
        return arrays;
    }

    /**
     * Returns the names of the fields in which {@code optimizer} keeps per-id arrays.
     *
     * @param optimizer the optimizer
     * @return the names, such as {@code means} and {@code variances} for Adam
     */
    public static Set<String> arrayKinds(Optimizer optimizer) {
        return stateFields(optimizer).keySet();
    }

    /**
     * Makes {@code optimizer} keep {@code array} as its {@code kind} state of {@code id}, replacing
     * what it kept; the array is detached from its manager, as the optimizer's own are.
     *
     * @param optimizer the optimizer
     * @param kind the field's name, one of {@link #arrayKinds}
     * @param id the parameter id
     * @param array the state
     * @throws IllegalArgumentException if the optimizer keeps no such state
     */
    public static void put(Optimizer optimizer, String kind, String id, NDArray array) {
        Map<String, Map<Device, NDArray>> state = stateFields(optimizer).get(kind);
        if (state == null) {
            throw new IllegalArgumentException(
                    optimizer.getClass().getSimpleName()
                            + " keeps no state named "
                            + kind
                            + "; it keeps "
                            + arrayKinds(optimizer));
        }
        array.detach();
        Map<Device, NDArray> byDevice = state.computeIfAbsent(id, key -> new HashMap<>());
        NDArray previous = byDevice.put(array.getDevice(), array);
        if (previous != null && previous != array) {
            previous.close();
        }
    }

    /**
     * Returns how many updates the optimizer made of each id, and the largest, {@code numUpdate}.
     *
     * @param optimizer the optimizer
     * @return the counts by id, the largest under the key {@code ""}
     */
    public static Map<String, Integer> updateCounts(Optimizer optimizer) {
        Map<String, Integer> counts = new LinkedHashMap<>(counts(optimizer));
        counts.put("", (Integer) get(field(Optimizer.class, NUM_UPDATE), optimizer));
        return counts;
    }

    /**
     * Sets the update counts {@link #updateCounts} returned.
     *
     * @param optimizer the optimizer
     * @param counts the counts by id, the largest under the key {@code ""}
     */
    public static void setUpdateCounts(Optimizer optimizer, Map<String, Integer> counts) {
        Map<String, Integer> own = counts(optimizer);
        own.clear();
        counts.forEach(
                (id, count) -> {
                    if (!id.isEmpty()) {
                        own.put(id, count);
                    }
                });
        set(field(Optimizer.class, NUM_UPDATE), optimizer, counts.getOrDefault("", 0));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Integer> counts(Optimizer optimizer) {
        return (Map<String, Integer>) get(field(Optimizer.class, UPDATE_COUNTS), optimizer);
    }

    /** The optimizer's fields of type {@code Map<String, Map<Device, NDArray>>}, by name. */
    @SuppressWarnings("unchecked")
    private static Map<String, Map<String, Map<Device, NDArray>>> stateFields(Optimizer optimizer) {
        Map<String, Map<String, Map<Device, NDArray>>> fields = new LinkedHashMap<>();
        for (Class<?> type = optimizer.getClass();
                type != Object.class;
                type = type.getSuperclass()) {
            for (Field field : type.getDeclaredFields()) {
                if (!Modifier.isStatic(field.getModifiers()) && holdsArraysById(field)) {
                    fields.put(
                            field.getName(),
                            (Map<String, Map<Device, NDArray>>) get(field, optimizer));
                }
            }
        }
        return fields;
    }

    private static boolean holdsArraysById(Field field) {
        if (!Map.class.isAssignableFrom(field.getType())
                || !(field.getGenericType() instanceof ParameterizedType map)) {
            return false;
        }
        Type value = map.getActualTypeArguments()[1];
        return value instanceof ParameterizedType inner
                && inner.getRawType() == Map.class
                && inner.getActualTypeArguments()[1] == NDArray.class;
    }

    private static Field field(Class<?> type, String name) {
        try {
            Field field = type.getDeclaredField(name);
            field.setAccessible(true);
            return field;
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(
                    "This DJL version's "
                            + type.getSimpleName()
                            + " has no field "
                            + name
                            + "; djl-fsdp needs DJL 0.35",
                    e);
        }
    }

    private static Object get(Field field, Object owner) {
        try {
            field.setAccessible(true);
            return field.get(owner);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("Cannot read " + field, e);
        }
    }

    private static void set(Field field, Object owner, Object value) {
        try {
            field.set(owner, value);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("Cannot write " + field, e);
        }
    }
}
