package ai.djl.fsdp.trainer;

import ai.djl.fsdp.internal.config.ExecutionOptions;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.nn.Parameter;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.Predicate;

/**
 * How a model is sharded, as PyTorch FSDP2's {@code fully_shard} arguments: which blocks become
 * units, whether parameters are split over the ranks, whether a unit's parameters are freed after
 * its forward, which units are recomputed in backward (activation checkpointing), prefetch, and
 * whether rank 0's initial values are broadcast. Build one with {@link #builder()}; how the trainer
 * steps (accumulation, clipping, logging) is {@link TrainerOptions}.
 *
 * <pre>{@code
 * FsdpConfig config = FsdpConfig.builder()
 *         .optShardingStrategy(ShardingStrategy.FULL_SHARD)
 *         .optWrapPolicy(WrapPolicy.byLayerClass("GPT2Block"))
 *         .build();
 * }</pre>
 */
public final class FsdpConfig {

    private final WrapPolicy wrapPolicy;
    private final boolean sharded;
    private final ExecutionOptions execution;
    private final ActivationCheckpointing activationCheckpointing;
    private final boolean syncModuleStates;
    private final MixedPrecision mixedPrecision;
    private final boolean cpuOffload;
    private final boolean frozenInComputePrecision;
    private final Predicate<Parameter> buffers;
    private final boolean hybrid;
    private final int shardGroupSize;
    private final boolean syncBatchNorm;
    private final CommunicationQuantization communicationQuantization;

    private FsdpConfig(Builder builder) {
        wrapPolicy = builder.wrapPolicy;
        sharded = builder.sharded;
        execution =
                new ExecutionOptions(
                        builder.reshardAfterForward,
                        builder.prefetch,
                        builder.mixedPrecision.param(),
                        builder.mixedPrecision.reduce(),
                        builder.quantization.quantizers());
        activationCheckpointing =
                builder.activationCheckpointing != null
                        ? builder.activationCheckpointing
                        : ActivationCheckpointing.defaultFor(builder.reshardAfterForward);
        syncModuleStates = builder.syncModuleStates;
        mixedPrecision = builder.mixedPrecision;
        cpuOffload = builder.cpuOffload;
        frozenInComputePrecision = builder.frozenInComputePrecision;
        buffers = builder.buffers;
        hybrid = builder.hybrid;
        shardGroupSize = builder.shardGroupSize;
        syncBatchNorm = builder.syncBatchNorm;
        communicationQuantization = builder.quantization;
    }

    /** Returns a builder with the defaults: FULL_SHARD, prefetch, sync module states. */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns the policy that chooses the units. */
    public WrapPolicy getWrapPolicy() {
        return wrapPolicy;
    }

    /** Returns which parameters are buffers, kept whole on every rank (see optBuffers). */
    public Predicate<Parameter> getBuffers() {
        return buffers;
    }

    /** Returns whether BatchNorm layers use the global batch's statistics (optSyncBatchNorm). */
    public boolean isSyncBatchNorm() {
        return syncBatchNorm;
    }

    /** Returns whether flat parameters are split across the ranks (false: replicated, DDP). */
    public boolean isSharded() {
        return sharded;
    }

    /** Returns whether a unit's gathered parameters are freed after its forward. */
    public boolean isReshardAfterForward() {
        return execution.reshardAfterForward();
    }

    /** Returns which units are recomputed in backward instead of keeping their graphs. */
    public ActivationCheckpointing getActivationCheckpointing() {
        return activationCheckpointing;
    }

    /** Returns whether the next unit's all-gather starts before the current unit computes. */
    public boolean isPrefetch() {
        return execution.prefetch();
    }

    /** Returns whether rank 0's initial parameters are broadcast to every rank. */
    public boolean isSyncModuleStates() {
        return syncModuleStates;
    }

    /** Returns the types parameters are gathered and computed in and gradients reduced in. */
    public MixedPrecision getMixedPrecision() {
        return mixedPrecision;
    }

    /** Returns whether the shards, gradients and optimizer state live and step on the host. */
    public boolean isCpuOffload() {
        return cpuOffload;
    }

    /**
     * Returns the type frozen parameters' shards are stored in: the compute type of the mixed
     * precision when {@link Builder#optFrozenInComputePrecision} is on (the default), else float32.
     */
    public Precision getFrozenStoragePrecision() {
        return frozenInComputePrecision ? mixedPrecision.param() : Precision.FLOAT32;
    }

    /**
     * Returns whether parameters are sharded within shard groups and replicated across them
     * (HYBRID_SHARD, HYBRID_SHARD_ZERO2).
     */
    public boolean isHybrid() {
        return hybrid;
    }

    /**
     * Returns the ranks of one shard group under hybrid sharding; empty means the ranks of one node
     * ({@code LOCAL_WORLD_SIZE}).
     */
    public OptionalInt getShardGroupSize() {
        return shardGroupSize > 0 ? OptionalInt.of(shardGroupSize) : OptionalInt.empty();
    }

    /** Returns how the runtime runs passes: the settings resolved for it. */
    ExecutionOptions getExecutionOptions() {
        return execution;
    }

    /**
     * Returns the strategy these settings amount to: {@code NO_SHARD} when nothing is split, {@code
     * FULL_SHARD} (or {@code HYBRID_SHARD}) when parameters are freed after forward, {@code
     * SHARD_GRAD_OP} (or {@code HYBRID_SHARD_ZERO2}) otherwise.
     */
    public ShardingStrategy getShardingStrategy() {
        return ShardingStrategy.of(sharded, isReshardAfterForward(), hybrid);
    }

    /** Returns which collectives send quantized values ({@link CommunicationQuantization}). */
    public CommunicationQuantization getCommunicationQuantization() {
        return communicationQuantization;
    }

    /** Builds an {@link FsdpConfig}. */
    public static final class Builder {

        private WrapPolicy wrapPolicy;
        private boolean sharded = true;
        private boolean reshardAfterForward = true;
        private ActivationCheckpointing activationCheckpointing;
        private boolean prefetch = true;
        private boolean syncModuleStates = true;
        private MixedPrecision mixedPrecision = MixedPrecision.FP32;
        private boolean cpuOffload;
        private boolean frozenInComputePrecision = true;
        private Predicate<Parameter> buffers = UnitPlan::isBuffer;
        private boolean hybrid;
        private int shardGroupSize;
        private boolean syncBatchNorm;
        private CommunicationQuantization quantization = CommunicationQuantization.NONE;

        Builder() {}

        /**
         * Sets sharding, resharding after forward and hybrid sharding as a named strategy does
         * (default {@link ShardingStrategy#FULL_SHARD}); activation checkpointing is left as set.
         *
         * @param strategy the strategy
         * @return this builder
         */
        public Builder optShardingStrategy(ShardingStrategy strategy) {
            Objects.requireNonNull(strategy, "strategy");
            sharded = strategy.isSharded();
            reshardAfterForward = strategy.isReshardAfterForward();
            hybrid = strategy.isHybrid();
            return this;
        }

        /**
         * Sets the ranks of one shard group for the hybrid strategies (default: the ranks of one
         * node, {@code LOCAL_WORLD_SIZE}); it must divide the world size. Shard groups are
         * consecutive ranks, which launchers number node by node.
         *
         * @param shardGroupSize the ranks that shard one copy of the model among themselves
         * @return this builder
         */
        public Builder optShardGroupSize(int shardGroupSize) {
            if (shardGroupSize < 1) {
                throw new IllegalArgumentException(
                        "A shard group holds at least one rank: " + shardGroupSize);
            }
            this.shardGroupSize = shardGroupSize;
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
         * Sets whether a unit's gathered parameters are freed after its forward and gathered again
         * for its backward (default true), FSDP2's {@code reshard_after_forward}.
         *
         * @param reshardAfterForward whether to free after forward
         * @return this builder
         */
        public Builder optReshardAfterForward(boolean reshardAfterForward) {
            this.reshardAfterForward = reshardAfterForward;
            return this;
        }

        /**
         * Sets which units run forward without a graph and are recomputed in backward, whatever the
         * sharding strategy (default {@link ActivationCheckpointing#defaultFor}).
         *
         * @param activationCheckpointing the units to recompute
         * @return this builder
         */
        public Builder optActivationCheckpointing(ActivationCheckpointing activationCheckpointing) {
            this.activationCheckpointing =
                    Objects.requireNonNull(activationCheckpointing, "activationCheckpointing");
            return this;
        }

        /**
         * Recomputes every unit (true) or none (false); see {@link
         * #optActivationCheckpointing(ActivationCheckpointing)}.
         *
         * @param recompute whether to recompute every unit
         * @return this builder
         */
        public Builder optActivationCheckpointing(boolean recompute) {
            return optActivationCheckpointing(ActivationCheckpointing.of(recompute));
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
         * Sets which parameters are buffers: state a block updates itself in its forward, which
         * takes no gradient (default {@link UnitPlan#isBuffer}: DJL's {@code BatchNorm}'s running
         * mean and variance, the types {@code RUNNING_MEAN} and {@code RUNNING_VAR}). Buffers are
         * not sharded: every rank keeps each whole, blocks update it in place once per batch, and
         * the ranks' buffers are averaged after every optimizer step.
         *
         * @param buffers whether a parameter is a buffer
         * @return this builder
         */
        public Builder optBuffers(Predicate<Parameter> buffers) {
            this.buffers = Objects.requireNonNull(buffers, "buffers");
            return this;
        }

        /**
         * Sets whether DJL's {@code BatchNorm} layers normalize each rank's slice with the mean and
         * variance of the global batch in training (default false), PyTorch's {@code
         * SyncBatchNorm}: the forward gathers each layer's per-channel statistics from every rank
         * and its backward sums two per-channel gradient terms over the ranks, so training matches
         * DJL's trainer on the global batch, running statistics included, at the cost of two small
         * collectives per layer and step (three under activation checkpointing, which recomputes
         * the forward). Without it each rank normalizes its slice with its own statistics and the
         * running statistics are averaged over the ranks after each step.
         *
         * @param syncBatchNorm whether to synchronize the batch statistics
         * @return this builder
         */
        public Builder optSyncBatchNorm(boolean syncBatchNorm) {
            this.syncBatchNorm = syncBatchNorm;
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
         * Sets the types parameters are gathered and computed in and gradients reduced in, FSDP2's
         * {@code mp_policy} (default {@link MixedPrecision#FP32}); shards, their gradients and the
         * optimizer state stay float32.
         *
         * @param mixedPrecision the policy, such as {@link MixedPrecision#BF16}
         * @return this builder
         */
        public Builder optMixedPrecision(MixedPrecision mixedPrecision) {
            this.mixedPrecision = Objects.requireNonNull(mixedPrecision, "mixedPrecision");
            return this;
        }

        /**
         * Sets whether parameter shards, their gradients and the optimizer state live in host
         * memory (default false), FSDP2's {@code CPUOffloadPolicy} and Accelerate's {@code
         * fsdp_offload_params}: each unit's shard is copied to the rank's device for its gather,
         * reduced gradient shards come back to the host, and the optimizer steps there. Host arrays
         * are pinned when the device is a GPU. On a CPU rank host and device are the same memory
         * and nothing is copied.
         *
         * @param cpuOffload whether to keep the model state on the host
         * @return this builder
         */
        public Builder optCpuOffload(boolean cpuOffload) {
            this.cpuOffload = cpuOffload;
            return this;
        }

        /**
         * Sets whether frozen parameters (a LoRA model's base weights) keep only a shard in the
         * mixed precision's compute type instead of a float32 master shard (default true). They are
         * gathered in the compute type anyway, so training computes exactly the same in half the
         * memory, as a PEFT model loaded with {@code torch_dtype=bfloat16}; the full and merged
         * states written afterwards hold the rounded values. Trainable parameters always keep
         * float32 master shards.
         *
         * @param frozenInComputePrecision false to keep frozen shards in float32
         * @return this builder
         */
        public Builder optFrozenInComputePrecision(boolean frozenInComputePrecision) {
            this.frozenInComputePrecision = frozenInComputePrecision;
            return this;
        }

        /**
         * Sets which collectives send quantized values (default {@link
         * CommunicationQuantization#NONE}).
         *
         * @param quantization what is quantized
         * @return this builder
         */
        public Builder optCommunicationQuantization(CommunicationQuantization quantization) {
            this.quantization = Objects.requireNonNull(quantization, "quantization");
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalStateException if no wrap policy was set
         * @throws IllegalArgumentException if the settings cannot run together
         */
        public FsdpConfig build() {
            if (wrapPolicy == null) {
                throw new IllegalStateException(
                        "FsdpConfig needs a wrap policy: call optWrapPolicy, e.g. with"
                                + " WrapPolicy.byLayerClass(\"GPT2Block\")");
            }
            if (!sharded) {
                // Nothing is freed or gathered when every rank holds everything.
                reshardAfterForward = false;
                hybrid = false;
            }
            return new FsdpConfig(this);
        }
    }
}
