package ai.djl.fsdp.trainer;

/**
 * How parameters, gradients and optimizer state are spread over the ranks.
 *
 * <p>All three run the same code path: only how many ranks a flat parameter is split over, when a
 * unit's gathered parameters are released, and whether a unit is recomputed in backward differ.
 */
public enum ShardingStrategy {
    /**
     * Parameters, gradients and optimizer state are sharded. A unit's parameters are gathered only
     * while it computes: once in forward, which builds no graph, and again in backward, where the
     * unit is recomputed. The least memory, two all-gathers per unit per micro-batch.
     */
    FULL_SHARD(true, true),

    /**
     * Gradients and optimizer state are sharded; a unit's parameters are gathered in forward and
     * kept, with the unit's graph, until its backward is done. No recompute: one all-gather per
     * unit per micro-batch and more memory.
     */
    SHARD_GRAD_OP(true, false),

    /** Nothing is sharded: every rank holds everything and gradients are all-reduced (DDP). */
    NO_SHARD(false, false);

    private final boolean sharded;
    private final boolean recompute;

    ShardingStrategy(boolean sharded, boolean recompute) {
        this.sharded = sharded;
        this.recompute = recompute;
    }

    /** Returns whether flat parameters are split across the ranks. */
    public boolean isSharded() {
        return sharded;
    }

    /**
     * Returns whether a unit runs forward without a graph and is recomputed in backward, which lets
     * its gathered parameters and activations go as soon as its forward ends.
     */
    public boolean recomputesInBackward() {
        return recompute;
    }
}
