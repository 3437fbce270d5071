package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.zoo.KvCache;
import ai.djl.ndarray.NDManager;

/**
 * What a T5 decoder keeps between generation steps, as Hugging Face's {@code EncoderDecoderCache}:
 * each block's self-attention keys and values of the tokens so far, and its keys and values of the
 * encoder's output, projected at the first step and reused at every later one. Explicit state the
 * caller owns, moved in and out of the blocks by the stack, so that the blocks stay pure functions;
 * close it when generation ends.
 */
public final class EncoderDecoderCache implements AutoCloseable {

    private final KvCache self;
    private final KvCache cross;

    /**
     * Creates an empty cache.
     *
     * @param manager the manager under which the cache allocates its own
     * @param layers the decoder's blocks
     */
    public EncoderDecoderCache(NDManager manager, int layers) {
        self = new KvCache(manager, layers);
        cross = new KvCache(manager, layers);
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

    @Override
    public void close() {
        self.close();
        cross.close();
    }
}
