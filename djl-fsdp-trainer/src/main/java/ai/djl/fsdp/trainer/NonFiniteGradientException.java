package ai.djl.fsdp.trainer;

import java.util.Locale;

/**
 * Thrown by {@code trainer.step()} when the global gradient norm has not been finite for {@link
 * TrainerOptions#getMaxNonFiniteSteps()} optimizer steps in a row. Those steps updated nothing, so
 * the parameters are still those of the last finite step. Every rank throws it at the same step.
 */
public class NonFiniteGradientException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final long step;
    private final double norm;
    private final int consecutiveSteps;

    /**
     * Creates the exception.
     *
     * @param step the optimizer step (counted from 1) whose gradient norm was not finite
     * @param norm that norm (NaN or infinite)
     * @param consecutiveSteps how many steps in a row ended so
     */
    public NonFiniteGradientException(long step, double norm, int consecutiveSteps) {
        super(
                String.format(
                        Locale.ROOT,
                        "optimizer step %d: the global gradient norm is %s (%d step(s) in a row;"
                                + " their updates were skipped); training stops. Lower the"
                                + " learning rate or clip gradients (TrainerOptions"
                                + ".optMaxGradNorm); optMaxNonFiniteSteps skips more such steps",
                        step,
                        norm,
                        consecutiveSteps));
        this.step = step;
        this.norm = norm;
        this.consecutiveSteps = consecutiveSteps;
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
}
