package ai.djl.fsdp.param;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Keeps the runtime's large transient flat arrays (gathered parameters, flat gradients) when they
 * are given back, and hands them out again for the next array of the same size, type and device:
 * the units of a model mostly share one size, so a step reuses a few buffers instead of freeing
 * each one and having the next come back as fresh pages the kernel must fault in and zero (on the
 * host the ranks' allocator returns every freed block above its mmap threshold to the kernel; see
 * docs/benchmarks.md). What the CUDA caching allocator does for PyTorch on a GPU, for these arrays
 * on any device.
 *
 * <p>A lent array's contents are undefined. Free arrays are kept until {@link #trim} (the runtime
 * trims at the end of each pass, so the pool never holds more than the pass held at once) or {@link
 * #close}. The arrays belong to the pool's own managers: borrowers never close them.
 *
 * <p>Setting the environment variable {@code FSDP_NO_BUFFER_POOL=1} turns pooling off ({@link
 * #fromEnvironment} returns null): every array is then allocated and freed as before, for measuring
 * what the pool gains.
 */
public final class BufferPool implements AutoCloseable {

    /** The environment variable that turns pooling off when set to {@code 1}. */
    public static final String DISABLE_VARIABLE = "FSDP_NO_BUFFER_POOL";

    private final Map<Device, NDManager> managers = new HashMap<>();
    private final Map<Key, Deque<NDArray>> free = new HashMap<>();
    private final Map<NDArray, Lent> lent = new IdentityHashMap<>();

    /** The size, type and device arrays are interchangeable by. */
    private record Key(Device device, Precision precision, long numel) {}

    /** A lent alias's key and the pooled array it shares memory with. */
    private record Lent(Key key, NDArray pooled) {}

    /**
     * Returns a new pool, or null when {@code FSDP_NO_BUFFER_POOL=1} turns pooling off.
     *
     * @return the pool, or null
     */
    public static BufferPool fromEnvironment() {
        return "1".equals(System.getenv(DISABLE_VARIABLE)) ? null : new BufferPool();
    }

    /**
     * Lends a 1-D array of {@code numel} elements on {@code scope}'s device: a free one of that
     * size and type, or a new one. What is lent is an alias owned by {@code scope} (sharing the
     * pooled array's memory), so that the arrays made from it (views, casts) belong to the
     * borrower's scope, never to the pool.
     *
     * @param scope the borrower's manager
     * @param numel the elements
     * @param precision the element type
     * @return the array, contents undefined; give it back with {@link #giveBack}
     */
    public NDArray lend(NDManager scope, long numel, Precision precision) {
        Device device = scope.getDevice();
        Key key = new Key(device, precision, numel);
        Deque<NDArray> arrays = free.get(key);
        NDArray pooled = arrays == null ? null : arrays.poll();
        if (pooled == null) {
            NDManager manager =
                    managers.computeIfAbsent(
                            device,
                            d -> {
                                NDManager m = NDManager.newBaseManager(d);
                                m.setName("fsdp-buffer-pool");
                                return m;
                            });
            pooled = precision.empty(manager, new Shape(numel));
        }
        NDArray alias = pooled.stopGradient();
        alias.attach(scope);
        lent.put(alias, new Lent(key, pooled));
        return alias;
    }

    /**
     * Takes back an array {@link #lend} gave out, to lend again; nothing may read or write it
     * afterwards (views of it included). The alias itself is freed with the borrower's scope.
     *
     * @param array the array
     * @throws IllegalArgumentException if the pool did not lend it
     */
    public void giveBack(NDArray array) {
        Lent loan = lent.remove(array);
        if (loan == null) {
            throw new IllegalArgumentException("The buffer pool did not lend this array");
        }
        free.computeIfAbsent(loan.key(), k -> new ArrayDeque<>()).push(loan.pooled());
    }

    /** Frees the arrays not lent out. */
    public void trim() {
        free.values().forEach(arrays -> arrays.forEach(NDArray::close));
        free.clear();
    }

    /** Returns the bytes of the arrays kept free. */
    public long getFreeBytes() {
        long bytes = 0;
        for (Map.Entry<Key, Deque<NDArray>> entry : free.entrySet()) {
            Key key = entry.getKey();
            bytes += entry.getValue().size() * key.numel() * key.precision().getBytes();
        }
        return bytes;
    }

    /** Frees every array, lent ones included. */
    @Override
    public void close() {
        free.clear();
        lent.clear();
        managers.values().forEach(NDManager::close);
        managers.clear();
    }
}
