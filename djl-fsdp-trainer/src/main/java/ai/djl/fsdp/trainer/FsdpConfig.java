package ai.djl.fsdp.trainer;

import ai.djl.fsdp.param.ParameterSource;
import ai.djl.fsdp.wrap.WrapPolicy;
import java.util.Objects;

/**
 * How a model is trained with FSDP: the sharding strategy, which blocks become units, and the
 * step's options. Build one with {@link #builder()}.
 *
 * <pre>{@code
 * FsdpConfig config = FsdpConfig.builder()
 *         .optShardingStrategy(ShardingStrategy.FULL_SHARD)
 *         .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
 *         .optGradientAccumulationSteps(4)
 *         .optMaxGradNorm(1.0f)
 *         .build();
 * }</pre>
 */
public final class FsdpConfig {

    private final ShardingStrategy shardingStrategy;
    private final WrapPolicy wrapPolicy;
    private final boolean prefetch;
    private final int gradientAccumulationSteps;
    private final float maxGradNorm;
    private final boolean syncModuleStates;
    private final boolean logAllRanks;
    private final ParameterSource parameterSource;
    private final boolean gatherOnClose;

    private FsdpConfig(Builder builder) {
        shardingStrategy = builder.shardingStrategy;
        wrapPolicy = builder.wrapPolicy;
        prefetch = builder.prefetch;
        gradientAccumulationSteps = builder.gradientAccumulationSteps;
        maxGradNorm = builder.maxGradNorm;
        syncModuleStates = builder.syncModuleStates;
        logAllRanks = builder.logAllRanks;
        parameterSource = builder.parameterSource;
        gatherOnClose = builder.gatherOnClose;
    }

    /** Returns whether closing the trainer gathers the whole model back onto every rank. */
    public boolean isGatherOnClose() {
        return gatherOnClose;
    }

    /** Returns where sharding reads the parameters' values, null for their own arrays. */
    public ParameterSource getParameterSource() {
        return parameterSource;
    }

    /** Returns a builder with the defaults: FULL_SHARD, prefetch, no accumulation, no clipping. */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns the sharding strategy. */
    public ShardingStrategy getShardingStrategy() {
        return shardingStrategy;
    }

    /** Returns the policy that chooses the units. */
    public WrapPolicy getWrapPolicy() {
        return wrapPolicy;
    }

    /** Returns whether the next unit's all-gather starts before the current unit computes. */
    public boolean isPrefetch() {
        return prefetch;
    }

    /** Returns how many micro-batches ({@code trainer.step()} calls) make one optimizer step. */
    public int getGradientAccumulationSteps() {
        return gradientAccumulationSteps;
    }

    /** Returns the largest global gradient norm, or 0 for no clipping. */
    public float getMaxGradNorm() {
        return maxGradNorm;
    }

    /** Returns whether rank 0's initial parameters are broadcast to every rank. */
    public boolean isSyncModuleStates() {
        return syncModuleStates;
    }

    /** Returns whether every rank keeps its logging listeners (else only rank 0). */
    public boolean isLogAllRanks() {
        return logAllRanks;
    }

    /** Builds an {@link FsdpConfig}. */
    public static final class Builder {

        private ShardingStrategy shardingStrategy = ShardingStrategy.FULL_SHARD;
        private WrapPolicy wrapPolicy;
        private boolean prefetch = true;
        private int gradientAccumulationSteps = 1;
        private float maxGradNorm;
        private boolean syncModuleStates = true;
        private boolean logAllRanks;
        private ParameterSource parameterSource;
        private boolean gatherOnClose = true;

        Builder() {}

        /**
         * Sets the sharding strategy (default {@link ShardingStrategy#FULL_SHARD}).
         *
         * @param shardingStrategy the strategy
         * @return this builder
         */
        public Builder optShardingStrategy(ShardingStrategy shardingStrategy) {
            this.shardingStrategy = Objects.requireNonNull(shardingStrategy, "shardingStrategy");
            return this;
        }

        /**
         * Sets the policy that chooses the units (required).
         *
         * @param wrapPolicy the policy
         * @return this builder
         */
        public Builder optWrapPolicy(WrapPolicy wrapPolicy) {
            this.wrapPolicy = Objects.requireNonNull(wrapPolicy, "wrapPolicy");
            return this;
        }

        /**
         * Sets whether the next unit's all-gather starts before the current unit computes (default
         * true).
         *
         * @param prefetch whether to prefetch
         * @return this builder
         */
        public Builder optPrefetch(boolean prefetch) {
            this.prefetch = prefetch;
            return this;
        }

        /**
         * Sets how many micro-batches make one optimizer step (default 1). The trainer applies the
         * optimizer on every {@code steps}-th {@code trainer.step()} call, with the mean of the
         * micro-batches' gradients.
         *
         * @param steps the number of micro-batches per optimizer step
         * @return this builder
         */
        public Builder optGradientAccumulationSteps(int steps) {
            if (steps < 1) {
                throw new IllegalArgumentException(
                        "gradientAccumulationSteps must be at least 1, got " + steps);
            }
            this.gradientAccumulationSteps = steps;
            return this;
        }

        /**
         * Clips gradients so their global norm is at most {@code maxGradNorm} (default: no
         * clipping).
         *
         * @param maxGradNorm the largest norm, positive
         * @return this builder
         */
        public Builder optMaxGradNorm(float maxGradNorm) {
            if (!(maxGradNorm > 0)) {
                throw new IllegalArgumentException(
                        "maxGradNorm must be positive, got " + maxGradNorm);
            }
            this.maxGradNorm = maxGradNorm;
            return this;
        }

        /**
         * Sets whether rank 0's initial parameters are broadcast to every rank (default true);
         * without it, every rank must initialize with the same seed.
         *
         * @param syncModuleStates whether to broadcast
         * @return this builder
         */
        public Builder optSyncModuleStates(boolean syncModuleStates) {
            this.syncModuleStates = syncModuleStates;
            return this;
        }

        /**
         * Sets whether every rank keeps its logging listeners (default false: only rank 0 logs and
         * shows progress).
         *
         * @param logAllRanks whether all ranks log
         * @return this builder
         */
        public Builder optLogAllRanks(boolean logAllRanks) {
            this.logAllRanks = logAllRanks;
            return this;
        }

        /**
         * Makes each rank read its shards from {@code source} (a checkpoint on disk) instead of
         * from the parameters' arrays, so no rank holds the whole model while the trainer is made;
         * the parameters' arrays then serve only for their shapes (see {@link ParameterSource}).
         * Every rank reads the same values, so nothing is broadcast.
         *
         * @param source where the values come from
         * @return this builder
         */
        public Builder optParameterSource(ParameterSource source) {
            this.parameterSource = source;
            return this;
        }

        /**
         * Sets whether closing the trainer gathers the whole model back onto every rank (default
         * true), so it can be used or saved as an ordinary model. A job that saves through {@link
         * FsdpTrainer#forEachUnitGathered} (one unit at a time) turns it off, so that no rank ever
         * holds the whole model; the model's parameters are then empty after close.
         *
         * @param gatherOnClose whether to gather on close
         * @return this builder
         */
        public Builder optGatherOnClose(boolean gatherOnClose) {
            this.gatherOnClose = gatherOnClose;
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalStateException if no wrap policy was set
         */
        public FsdpConfig build() {
            if (wrapPolicy == null) {
                throw new IllegalStateException(
                        "FsdpConfig needs a wrap policy: call optWrapPolicy, e.g. with"
                                + " WrapPolicy.byLayerClass(\"GPT2Block\")");
            }
            return new FsdpConfig(this);
        }
    }
}
