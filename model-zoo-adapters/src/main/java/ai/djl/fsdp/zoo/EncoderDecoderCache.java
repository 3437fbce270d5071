package ai.djl.fsdp.zoo;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.util.PairList;

/**
 * What an encoder-decoder model (T5) keeps between generation steps, as Hugging Face's {@code
 * EncoderDecoderCache} and {@code encoder_outputs}: the encoder's output, computed at the first
 * step; each decoder block's self-attention keys and values of the tokens so far; and its keys and
 * values of the encoder's output, projected at the first step and reused at every later one.
 * Explicit state the caller owns, moved in and out of the blocks by the stacks, so that the blocks
 * stay pure functions. Through {@link ai.djl.nn.Block#forward(ai.djl.training.ParameterStore,
 * ai.djl.ndarray.NDList, boolean, PairList)} (an FSDP trainer's {@code evaluate}, for one) it
 * travels in the call's parameters, as {@link KvCache} does. Close it when generation ends.
 */
public final class EncoderDecoderCache implements AutoCloseable {

    private final NDManager manager;
    private final KvCache self;
    private final KvCache cross;
    private NDArray encoderStates;

    /**
     * Creates an empty cache.
     *
     * @param manager the manager under which the cache allocates its own
     * @param layers the decoder's blocks
     */
    public EncoderDecoderCache(NDManager manager, int layers) {
        this.manager = manager.newSubManager();
        self = new KvCache(this.manager, layers);
        cross = new KvCache(this.manager, layers);
    }

    /**
     * Returns the self-attention keys and values of the decoder's tokens so far.
     *
     * @return the self-attention cache
     */
    public KvCache selfAttention() {
        return self;
    }

    /**
     * Returns the keys and values of the encoder's output, empty before the first step.
     *
     * @return the cross-attention cache
     */
    public KvCache crossAttention() {
        return cross;
    }

    /**
     * Returns the number of decoder tokens cached.
     *
     * @return the cached decoder length
     */
    public long length() {
        return self.length();
    }

    /**
     * Returns the encoder's output, or null before the first step.
     *
     * @return the encoder's output {@code [B, S, C]}, or null
     */
    public NDArray encoderStates() {
        return encoderStates;
    }

    /**
     * Keeps the encoder's output for the later steps; the cache owns it from now on.
     *
     * @param states the encoder's output {@code [B, S, C]}
     */
    public void setEncoderStates(NDArray states) {
        states.attach(manager);
        encoderStates = states;
    }

    /**
     * Returns the parameters of a model's forward call that carry this cache.
     *
     * @return {@code [(KvCache.PARAMETER, this)]}
     */
    public PairList<String, Object> asParams() {
        PairList<String, Object> params = new PairList<>();
        params.add(KvCache.PARAMETER, this);
        return params;
    }

    /**
     * Returns the cache a forward call's parameters carry.
     *
     * @param params the call's parameters, or null
     * @return the cache, or null when the call runs without one
     * @throws IllegalArgumentException if {@link KvCache#PARAMETER} holds something else
     */
    public static EncoderDecoderCache of(PairList<String, Object> params) {
        Object value = params == null ? null : params.get(KvCache.PARAMETER);
        if (value == null || value instanceof EncoderDecoderCache) {
            return (EncoderDecoderCache) value;
        }
        throw new IllegalArgumentException(
                "an encoder-decoder model's forward parameter "
                        + KvCache.PARAMETER
                        + " must be an EncoderDecoderCache, got "
                        + value.getClass().getName());
    }

    @Override
    public void close() {
        self.close();
        cross.close();
        manager.close();
    }
}
