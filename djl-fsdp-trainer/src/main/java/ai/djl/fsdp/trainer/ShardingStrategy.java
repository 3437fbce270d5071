package ai.djl.fsdp.trainer;

/**
 * Accelerate's and PyTorch FSDP1's names for how parameters are sharded; {@link
 * FsdpConfig.Builder#optShardingStrategy} sets sharding, resharding after forward and hybrid
 * sharding at once. Which units are recomputed in backward is a setting of its own ({@link
 * FsdpConfig.Builder#optActivationCheckpointing}).
 */
public enum ShardingStrategy {
    /**
     * Parameters, gradients and optimizer state are sharded; a unit's parameters are freed after
     * its forward and gathered again for its backward. The least memory, two all-gathers per unit
     * per micro-batch.
     */
    FULL_SHARD(true, true),

    /**
     * Gradients and optimizer state are sharded; a unit's parameters are gathered in forward and
     * kept until its backward is done: one all-gather per unit per micro-batch and more memory.
     */
    SHARD_GRAD_OP(true, false),

    /** Nothing is sharded: every rank holds everything and gradients are all-reduced (DDP). */
    NO_SHARD(false, false),

    /**
     * {@link #FULL_SHARD} inside each shard group (by default the ranks of one node, {@link
     * FsdpConfig.Builder#optShardGroupSize}), replicated across the shard groups: parameters are
     * gathered within the shard group, gradients reduce-scattered within it and then each shard's
     * gradient all-reduced (averaged) across the ranks holding the same shard in the other groups.
     */
    HYBRID_SHARD(true, true, true),

    /** {@link #SHARD_GRAD_OP} inside each shard group, replicated across them (as HYBRID_SHARD). */
    HYBRID_SHARD_ZERO2(true, false, true);

    private final boolean sharded;
    private final boolean reshardAfterForward;
    private final boolean hybrid;

    ShardingStrategy(boolean sharded, boolean reshardAfterForward) {
        this(sharded, reshardAfterForward, false);
    }

    ShardingStrategy(boolean sharded, boolean reshardAfterForward, boolean hybrid) {
        this.sharded = sharded;
        this.reshardAfterForward = reshardAfterForward;
        this.hybrid = hybrid;
    }

    /**
     * Returns whether parameters are sharded within shard groups and replicated across them, rather
     * than sharded over every rank.
     */
    public boolean isHybrid() {
        return hybrid;
    }

    /** Returns whether flat parameters are split across the ranks. */
    public boolean isSharded() {
        return sharded;
    }

    /** Returns whether a unit's gathered parameters are freed after its forward. */
    public boolean isReshardAfterForward() {
        return reshardAfterForward;
    }

    /**
     * Returns the strategy these settings amount to.
     *
     * @param sharded whether parameters are split over the ranks
     * @param reshardAfterForward whether a unit's gathered parameters are freed after its forward
     * @param hybrid whether parameters are split within shard groups and replicated across them
     * @return the strategy
     */
    static ShardingStrategy of(boolean sharded, boolean reshardAfterForward, boolean hybrid) {
        for (ShardingStrategy strategy : values()) {
            if (strategy.sharded == sharded
                    && strategy.reshardAfterForward == (sharded && reshardAfterForward)
                    && strategy.hybrid == (sharded && hybrid)) {
                return strategy;
            }
        }
        throw new IllegalStateException("No strategy shards, reshards and replicates so");
    }
}
