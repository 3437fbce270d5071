package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;

/**
 * A causal language model's forward as {@link Generator} calls it: a whole model in this process
 * ({@link #of(CausalLM)}), or one sharded over ranks ({@link ShardedDecoder}), where every decoding
 * step is a collective and the ranks agree on how many steps they take.
 */
interface Decoder {

    /**
     * Returns the model's configuration.
     *
     * @return the configuration
     */
    ModelConfig getConfig();

    /**
     * Runs the model on new tokens, continuing and extending the cache (see {@link
     * CausalLM#forward}).
     *
     * @param ids the new tokens {@code [B, T]}, int64
     * @param mask {@code [B, cached + T]}, or null when nothing is padded
     * @param cache the cache
     * @return the logits {@code [B, T, vocab]}
     */
    NDArray forward(NDArray ids, NDArray mask, KvCache cache);

    /**
     * Returns the decoding steps every process takes: the least of their budgets (this one's on one
     * process). A collective where the model is sharded.
     *
     * @param budget this process's budget
     * @return the agreed budget
     */
    default int agreeOnSteps(int budget) {
        return budget;
    }

    /**
     * Returns the decoding batches every process takes: the most of their counts (this one's on one
     * process). A collective where the model is sharded.
     *
     * @param batches this process's batches
     * @return the agreed batches
     */
    default int agreeOnBatches(int batches) {
        return batches;
    }

    /**
     * Returns whether any process still has a sequence to continue (this one's answer on one
     * process). A collective where the model is sharded: every process calls it once per step.
     *
     * @param active whether this process has one
     * @return whether to take another step
     */
    default boolean anyActive(boolean active) {
        return active;
    }

    /**
     * Returns the decoder of an initialized model in this process.
     *
     * @param model the model
     * @return its decoder
     */
    static Decoder of(CausalLM model) {
        return new Decoder() {
            @Override
            public ModelConfig getConfig() {
                return model.getConfig();
            }

            @Override
            public NDArray forward(NDArray ids, NDArray mask, KvCache cache) {
                return model.forward(
                        new ParameterStore(ids.getManager(), false), ids, mask, cache, false);
            }
        };
    }
}
