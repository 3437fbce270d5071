package ai.djl.fsdp.tensor.op;

import ai.djl.Device;
import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Float32 scalar arrays on a device, each made once per value and kept: what {@link ScalarOps}
 * multiplies, divides and adds with. A step uses a handful of values (AdamW's betas, epsilon, the
 * step's bias corrections, the attention's scale) once per flat shard or per layer; making each
 * anew was an {@code aten::full} per use, about 5% of a host-bound step. The arrays are never
 * written: libtorch's own reference keeps one a graph saved alive after it leaves the cache.
 */
final class DeviceScalars {

    /** Values kept per device, the least recently used dropped first. */
    static final int CAPACITY = 64;

    private static final Map<Device, DeviceScalars> BY_DEVICE = new HashMap<>();

    private final NDManager manager;
    private final Map<Integer, NDArray> byBits;

    private DeviceScalars(Device device) {
        manager = NDManager.newBaseManager(device);
        byBits =
                new LinkedHashMap<>(CAPACITY, 0.75f, true) {
                    @Override
                    protected boolean removeEldestEntry(Map.Entry<Integer, NDArray> eldest) {
                        if (size() <= CAPACITY) {
                            return false;
                        }
                        eldest.getValue().close();
                        return true;
                    }
                };
    }

    /** {@link OwnedArrays#scalar}'s array, in the cache's own manager. */
    private NDArray make(float value) {
        return manager.full(new Shape(), value, DataType.FLOAT32, manager.getDevice());
    }

    /**
     * Returns the 0-dimensional float32 array of {@code value} on {@code like}'s device, which the
     * caller must not close or write.
     *
     * @param like an array on the device
     * @param value the value
     * @return the shared scalar array
     */
    static synchronized NDArray of(NDArray like, float value) {
        DeviceScalars scalars = BY_DEVICE.computeIfAbsent(like.getDevice(), DeviceScalars::new);
        return scalars.byBits.computeIfAbsent(
                Float.floatToRawIntBits(value), bits -> scalars.make(value));
    }
}
