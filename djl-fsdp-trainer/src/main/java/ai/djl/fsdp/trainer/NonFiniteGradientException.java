package ai.djl.fsdp.trainer;

import java.util.Locale;

/**
 * Thrown by {@code trainer.step()} when the global gradient norm has not been finite for {@link
 * TrainerOptions#getMaxNonFiniteSteps()} optimizer steps in a row, or, in float16 mixed precision,
 * when the loss scale backs off below its floor ({@link #lossScaleCollapsed}). Those steps updated
 * nothing, so the parameters are still those of the last finite step. Every rank throws it at the
 * same step.
 */
public class NonFiniteGradientException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final long step;
    private final double norm;
    private final int consecutiveSteps;
    private final double lossScale;
    private final double minLossScale;

    /**
     * Creates the exception.
     *
     * @param step the optimizer step (counted from 1) whose gradient norm was not finite
     * @param norm that norm (NaN or infinite)
     * @param consecutiveSteps how many steps in a row ended so
     */
    public NonFiniteGradientException(long step, double norm, int consecutiveSteps) {
        this(
                String.format(
                        Locale.ROOT,
                        "optimizer step %d: the global gradient norm is %s (%d step(s) in a row;"
                                + " their updates were skipped); training stops. Lower the"
                                + " learning rate or clip gradients (TrainerOptions"
                                + ".optMaxGradNorm); optMaxNonFiniteSteps skips more such steps",
                        step,
                        norm,
                        consecutiveSteps),
                step,
                norm,
                consecutiveSteps,
                Double.NaN,
                Double.NaN);
    }

    private NonFiniteGradientException(
            String message,
            long step,
            double norm,
            int consecutiveSteps,
            double lossScale,
            double minLossScale) {
        super(message);
        this.step = step;
        this.norm = norm;
        this.consecutiveSteps = consecutiveSteps;
        this.lossScale = lossScale;
        this.minLossScale = minLossScale;
    }

    /**
     * Creates the exception of a float16 run whose loss scale was backed off below its floor: the
     * gradients overflow however small the scale, so skipping more steps cannot help.
     *
     * @param step the optimizer step (counted from 1) that overflowed
     * @param norm the global gradient norm of that step
     * @param skippedSteps how many steps in a row the loss scaler skipped
     * @param scale the scale after backing off
     * @param minScale the floor it fell below
     * @return the exception
     */
    public static NonFiniteGradientException lossScaleCollapsed(
            long step, double norm, int skippedSteps, float scale, float minScale) {
        return new NonFiniteGradientException(
                String.format(
                        Locale.ROOT,
                        "optimizer step %d: the float16 gradients were not finite for %d step(s)"
                                + " in a row (norm %s), and the loss scale backed off to %s, below"
                                + " its floor %s; training stops. The loss or the activations"
                                + " themselves are not finite or exceed float16's range (65504):"
                                + " check the data and the learning rate, or train in bf16."
                                + " LossScaler.Settings.withMinScale lowers the floor",
                        step,
                        skippedSteps,
                        norm,
                        scale,
                        minScale),
                step,
                norm,
                skippedSteps,
                scale,
                minScale);
    }

    /** Returns the optimizer step (counted from 1) whose gradient norm was not finite. */
    public long getStep() {
        return step;
    }

    /** Returns that gradient norm: NaN or infinite. */
    public double getNorm() {
        return norm;
    }

    /** Returns how many optimizer steps in a row had a non-finite norm. */
    public int getConsecutiveSteps() {
        return consecutiveSteps;
    }

    /** Returns the loss scale after backing off, for {@link #lossScaleCollapsed}; NaN otherwise. */
    public double getLossScale() {
        return lossScale;
    }

    /**
     * Returns the floor the loss scale fell below, for {@link #lossScaleCollapsed}; NaN otherwise.
     */
    public double getMinLossScale() {
        return minLossScale;
    }
}
