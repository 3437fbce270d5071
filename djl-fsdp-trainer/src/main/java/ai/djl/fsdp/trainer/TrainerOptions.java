package ai.djl.fsdp.trainer;

import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.optim.LossScaler;
import ai.djl.fsdp.optim.ParameterGroups;
import java.util.Objects;

/**
 * How an {@link FsdpTrainer} steps and starts, beside how it shards ({@link FsdpConfig}): gradient
 * accumulation, clipping, which ranks log, where the initial parameter values come from, and
 * whether closing gathers the model back. Build one with {@link #builder()}.
 *
 * <pre>{@code
 * TrainerOptions options = TrainerOptions.builder()
 *         .optGradientAccumulationSteps(4)
 *         .optMaxGradNorm(1.0f)
 *         .build();
 * }</pre>
 */
public final class TrainerOptions {

    private final int gradientAccumulationSteps;
    private final float maxGradNorm;
    private final boolean logAllRanks;
    private final ParameterSource initialValues;
    private final boolean gatherOnClose;
    private final int maxNonFiniteSteps;
    private final LossScaler.Settings lossScaling;
    private final ParameterGroups parameterGroups;

    private TrainerOptions(Builder builder) {
        gradientAccumulationSteps = builder.gradientAccumulationSteps;
        maxGradNorm = builder.maxGradNorm;
        logAllRanks = builder.logAllRanks;
        initialValues = builder.initialValues;
        gatherOnClose = builder.gatherOnClose;
        maxNonFiniteSteps = builder.maxNonFiniteSteps;
        lossScaling = builder.lossScaling;
        parameterGroups = builder.parameterGroups;
    }

    /**
     * Returns the defaults: no accumulation, no clipping, rank 0 logs, gather on close, stop at the
     * first non-finite gradient.
     */
    public static TrainerOptions defaults() {
        return builder().build();
    }

    /** Returns a builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns how many micro-batches ({@code trainer.step()} calls) make one optimizer step. */
    public int getGradientAccumulationSteps() {
        return gradientAccumulationSteps;
    }

    /** Returns which parameters the optimizer decays, and how it scales their learning rate. */
    public ParameterGroups getParameterGroups() {
        return parameterGroups;
    }

    /** Returns the largest global gradient norm, or 0 for no clipping. */
    public float getMaxGradNorm() {
        return maxGradNorm;
    }

    /** Returns whether every rank keeps its logging listeners (else only rank 0). */
    public boolean isLogAllRanks() {
        return logAllRanks;
    }

    /** Returns where sharding reads the parameters' values, null for their own arrays. */
    public ParameterSource getInitialValues() {
        return initialValues;
    }

    /** Returns whether closing the trainer gathers the whole model back onto every rank. */
    public boolean isGatherOnClose() {
        return gatherOnClose;
    }

    /**
     * Returns after how many consecutive optimizer steps with a non-finite global gradient norm the
     * trainer throws {@link NonFiniteGradientException}.
     */
    public int getMaxNonFiniteSteps() {
        return maxNonFiniteSteps;
    }

    /**
     * Returns how a float16 run scales its loss: the settings given to the builder, else {@link
     * LossScaler.Settings#DEFAULTS}.
     */
    public LossScaler.Settings getLossScaling() {
        return lossScaling != null ? lossScaling : LossScaler.Settings.DEFAULTS;
    }

    /** Returns whether loss scaling settings were given (they apply to float16 only). */
    public boolean isLossScalingSet() {
        return lossScaling != null;
    }

    /** Builds {@link TrainerOptions}. */
    public static final class Builder {

        private int gradientAccumulationSteps = 1;
        private float maxGradNorm;
        private boolean logAllRanks;
        private ParameterSource initialValues;
        private boolean gatherOnClose = true;
        private int maxNonFiniteSteps = 1;
        private LossScaler.Settings lossScaling;
        private ParameterGroups parameterGroups = ParameterGroups.ALL;

        Builder() {}

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
         * clipping; the norm is measured either way).
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
        public Builder optInitialValues(ParameterSource source) {
            this.initialValues = source;
            return this;
        }

        /**
         * Sets whether closing the trainer gathers the whole model back onto every rank (default
         * true), so it can be used or saved as an ordinary model. A job that saves unit by unit
         * turns it off, so that no rank ever holds the whole model; the model's parameters are then
         * empty after close (listeners that read the whole model still see it at training end).
         *
         * @param gatherOnClose whether to gather on close
         * @return this builder
         */
        public Builder optGatherOnClose(boolean gatherOnClose) {
            this.gatherOnClose = gatherOnClose;
            return this;
        }

        /**
         * Sets after how many consecutive optimizer steps with a non-finite (NaN or infinite)
         * global gradient norm {@code trainer.step()} throws {@link NonFiniteGradientException}
         * (default 1: the first such step). Such a step never updates the parameters: its gradients
         * are dropped, so a larger value skips up to {@code steps - 1} bad batches in a row and
         * goes on. The norm is the same on every rank, so all ranks stop at the same step.
         *
         * @param steps the number of consecutive non-finite steps that stop training, at least 1
         * @return this builder
         */
        public Builder optMaxNonFiniteSteps(int steps) {
            if (steps < 1) {
                throw new IllegalArgumentException(
                        "maxNonFiniteSteps must be at least 1, got " + steps);
            }
            this.maxNonFiniteSteps = steps;
            return this;
        }

        /**
         * Sets how a run in float16 mixed precision ({@code MixedPrecision.FP16}) scales its loss
         * (default {@link LossScaler.Settings#DEFAULTS}). Such a run always scales its loss; the
         * steps its scaler skips for an overflow do not count toward {@link #optMaxNonFiniteSteps}.
         * Other precisions refuse these settings.
         *
         * @param settings the scale's start, growth, backoff and floor
         * @return this builder
         */
        public Builder optLossScaling(LossScaler.Settings settings) {
            this.lossScaling = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /**
         * Sets which parameters the optimizer decays and how it scales their learning rates
         * (default {@link ParameterGroups#ALL}: the optimizer's own settings for every one), as
         * PyTorch's parameter groups do; for example {@code
         * ParameterGroups.builder().optNoDecay(ParameterGroups.biasesAndNorms()).build()}, Hugging
         * Face Trainer's rule. Needs an {@link ai.djl.fsdp.optim.ElementwiseOptimizer} ({@link
         * ai.djl.fsdp.optim.Adam}, {@link ai.djl.fsdp.optim.Sgd}) as the training config's
         * optimizer.
         *
         * @param groups the groups
         * @return this builder
         */
        public Builder optParameterGroups(ParameterGroups groups) {
            this.parameterGroups = Objects.requireNonNull(groups, "groups");
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the options
         */
        public TrainerOptions build() {
            return new TrainerOptions(this);
        }
    }
}
