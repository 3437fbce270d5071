package ai.djl.fsdp.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/**
 * The keys and values of every decoder layer for the positions processed so far, so that generation
 * computes each new token's attention without recomputing the prefix.
 *
 * <p>The cache is explicit state owned by the caller: layers receive the past keys and values as
 * inputs and return the updated ones as outputs, and {@link CausalLM#forward} moves them in and out
 * of this object. A layer therefore keeps no state between calls, which the FSDP units (recomputed
 * in backward) rely on. The cache owns its arrays; close it when generation ends.
 */
public final class KvCache implements AutoCloseable {

    private final NDManager manager;
    private final NDArray[] keys;
    private final NDArray[] values;
    private long length;

    /**
     * Creates an empty cache.
     *
     * @param manager the manager under which the cache allocates its own manager
     * @param layers the number of decoder layers
     */
    public KvCache(NDManager manager, int layers) {
        this.manager = manager.newSubManager();
        keys = new NDArray[layers];
        values = new NDArray[layers];
    }

    /**
     * Returns the number of cached positions.
     *
     * @return the cached sequence length
     */
    public long length() {
        return length;
    }

    /**
     * Returns a layer's cached keys and values, empty ({@code [B, H, 0, D]}) before the first call.
     *
     * @param layer the layer index
     * @param batch the batch size
     * @param heads the number of key-value heads
     * @param headDim the head size
     * @return {@code [keys, values]}
     */
    public NDList past(int layer, long batch, long heads, long headDim) {
        if (keys[layer] == null) {
            Shape empty = new Shape(batch, heads, 0, headDim);
            return new NDList(manager.zeros(empty), manager.zeros(empty));
        }
        return new NDList(keys[layer], values[layer]);
    }

    /**
     * Stores a layer's keys and values after a call, replacing the previous ones. The last layer's
     * update also advances {@link #length()}.
     *
     * @param layer the layer index
     * @param present {@code [keys, values]}, covering every position so far
     */
    public void update(int layer, NDList present) {
        NDArray k = present.get(0);
        NDArray v = present.get(1);
        k.attach(manager);
        v.attach(manager);
        if (keys[layer] != null && keys[layer] != k) {
            keys[layer].close();
            values[layer].close();
        }
        keys[layer] = k;
        values[layer] = v;
        if (layer == keys.length - 1) {
            length = k.getShape().get(2);
        }
    }

    /** {@inheritDoc} */
    @Override
    public void close() {
        manager.close();
    }
}
