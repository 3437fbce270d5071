package ai.djl.fsdp.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.util.PairList;

/**
 * The keys and values of every decoder layer for the positions processed so far, so that generation
 * computes each new token's attention without recomputing the prefix.
 *
 * <p>The cache is explicit state owned by the caller: layers receive the past keys and values as
 * inputs and return the updated ones as outputs, and {@link CausalLM#forward} moves them in and out
 * of this object. A layer therefore keeps no state between calls, which the FSDP units (recomputed
 * in backward) rely on. The cache owns its arrays; close it when generation ends.
 *
 * <p>Through {@link ai.djl.nn.Block#forward(ai.djl.training.ParameterStore, NDList, boolean,
 * PairList)} (a trainer's forward, for one) the cache travels in the call's parameters under {@link
 * #PARAMETER}, Hugging Face's name for it: {@code block.forward(ps, inputs, false,
 * cache.asParams())}.
 */
public final class KvCache implements AutoCloseable {

    /** The name of a forward call's parameter that carries the cache. */
    public static final String PARAMETER = "past_key_values";

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

    /**
     * Returns the parameters of a block's forward call that carry this cache.
     *
     * @return {@code [(PARAMETER, this)]}
     */
    public PairList<String, Object> asParams() {
        PairList<String, Object> params = new PairList<>();
        params.add(PARAMETER, this);
        return params;
    }

    /**
     * Returns the cache a forward call's parameters carry.
     *
     * @param params the call's parameters, or null
     * @return the cache, or null when the call runs without one
     * @throws IllegalArgumentException if {@link #PARAMETER} holds something else
     */
    public static KvCache of(PairList<String, Object> params) {
        Object value = params == null ? null : params.get(PARAMETER);
        if (value == null || value instanceof KvCache) {
            return (KvCache) value;
        }
        throw new IllegalArgumentException(
                "the forward parameter "
                        + PARAMETER
                        + " must be a KvCache, got "
                        + value.getClass().getName());
    }

    /** {@inheritDoc} */
    @Override
    public void close() {
        manager.close();
    }
}
