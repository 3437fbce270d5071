package ai.djl.fsdp.optim;

import ai.djl.ndarray.NDArray;

/**
 * A factor over the elements of one flat shard, such as its weight-decay or learning-rate scale:
 * one value for every element, or one value per element where the shard mixes parameters of
 * different groups (a unit's weights beside its biases and normalization weights).
 */
public final class ElementFactor {

    /** Every element scaled by 1: no change. */
    public static final ElementFactor ONE = new ElementFactor(1f, null);

    private final float value;
    private final NDArray perElement;

    private ElementFactor(float value, NDArray perElement) {
        this.value = value;
        this.perElement = perElement;
    }

    /**
     * Returns the same factor for every element.
     *
     * @param value the factor
     * @return the factor
     */
    public static ElementFactor uniform(float value) {
        return value == 1f ? ONE : new ElementFactor(value, null);
    }

    /**
     * Returns one factor per element.
     *
     * @param perElement the factors, shaped as the shard and on its device
     * @return the factor
     */
    public static ElementFactor perElement(NDArray perElement) {
        return new ElementFactor(Float.NaN, perElement);
    }

    /** Returns whether every element has the same factor, {@link #getValue()}. */
    public boolean isUniform() {
        return perElement == null;
    }

    /** Returns the factor of every element; only for a {@link #isUniform() uniform} factor. */
    public float getValue() {
        if (!isUniform()) {
            throw new IllegalStateException("The factor differs between elements");
        }
        return value;
    }

    /** Returns the factors, one per element; null for a {@link #isUniform() uniform} factor. */
    public NDArray getPerElement() {
        return perElement;
    }

    /** Returns the bytes of the per-element factors, 0 for a uniform factor. */
    long bytes() {
        return isUniform() ? 0 : perElement.size() * perElement.getDataType().getNumOfBytes();
    }
}
