package ai.djl.fsdp.optim;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import java.util.List;

/**
 * Dynamic loss scaling for float16 training, with explicit state: the scale and the optimizer steps
 * in a row whose gradients were finite.
 *
 * <p>float16 gradients below 6e-8 vanish and above 65504 overflow, so the loss is multiplied by the
 * scale before backward ({@link #scale(NDArray)}), which lifts small gradients into float16's
 * range; the float32 shard gradients are divided by it again before clipping and the optimizer
 * ({@link #unscale(List)}). When any rank's gradients hold an infinity or a NaN (the scale was too
 * large), every rank skips that optimizer step and the scale is multiplied by the backoff factor;
 * after {@link Settings#growthInterval()} good steps in a row it is multiplied by the growth
 * factor, to find again the largest scale that does not overflow ({@link #update(boolean)}). The
 * ranks agree with one all-reduce of a float per step, so they always take or skip a step together.
 */
public final class LossScaler {

    private final Settings settings;
    private final ProcessGroup group;
    private float scale;
    private int goodSteps;
    private int skippedSteps;

    /**
     * Creates a scaler at the settings' initial scale.
     *
     * @param settings the scale's start, growth, backoff and floor
     * @param group the ranks that agree on overflow
     */
    public LossScaler(Settings settings, ProcessGroup group) {
        this.settings = settings;
        this.group = group;
        scale = settings.initialScale();
    }

    /** Returns the settings. */
    public Settings getSettings() {
        return settings;
    }

    /** Returns the factor the loss is multiplied by before backward. */
    public float getScale() {
        return scale;
    }

    /** Returns the optimizer steps in a row with finite gradients since the scale last changed. */
    public int getGoodSteps() {
        return goodSteps;
    }

    /** Returns how many optimizer steps in a row were skipped for an overflow. */
    public int getSkippedSteps() {
        return skippedSteps;
    }

    /**
     * Sets the state saved by a checkpoint, so a resumed run scales as the saved one would have.
     *
     * @param scale the scale
     * @param goodSteps the good steps in a row
     * @throws IllegalArgumentException for a scale that is not positive and finite, or negative
     *     good steps
     */
    public void restore(float scale, int goodSteps) {
        if (!(scale > 0) || !Float.isFinite(scale) || goodSteps < 0) {
            throw new IllegalArgumentException(
                    "a loss scale must be positive and finite with good steps >= 0, got "
                            + scale
                            + " and "
                            + goodSteps);
        }
        this.scale = scale;
        this.goodSteps = goodSteps;
        skippedSteps = 0;
    }

    /**
     * Returns the loss times the scale, in float32 (a float16 loss times the scale would overflow).
     * Backward from it gives gradients times the scale.
     *
     * @param loss the loss, of any floating type
     * @return the scaled loss, in the loss's manager
     */
    public NDArray scale(NDArray loss) {
        NDArray single = Precision.FLOAT32.cast(loss);
        NDArray scaled = ScalarOps.mul(single, scale);
        if (single != loss) {
            // The graph keeps what backward needs; the float32 copy itself is no longer used.
            single.close();
        }
        return scaled;
    }

    /**
     * Divides the gradients by the scale and tells whether any rank's gradients are not finite: a
     * collective (one all-reduce of a float), every rank calls it at each optimizer step.
     *
     * @param gradients this rank's float32 shard gradients
     * @return whether the step must be skipped, the same on every rank
     */
    public boolean unscale(List<NDArray> gradients) {
        float inverse = 1f / scale;
        boolean finite = true;
        for (NDArray gradient : gradients) {
            ScalarOps.muli(gradient, inverse);
            // A sum is finite only if every element is (a float32 sum of unscaled float16
            // gradients does not overflow).
            try (NDArray sum = gradient.sum()) {
                finite &= Float.isFinite(sum.getFloat());
            }
        }
        if (group.getSize() == 1) {
            return !finite;
        }
        try (NDManager scope = NDManager.newBaseManager(group.getDevice());
                NDArray overflows = scope.create(new float[] {finite ? 0f : 1f})) {
            group.allReduce(overflows, ReduceOp.SUM);
            return overflows.getFloat(0) > 0;
        }
    }

    /**
     * Moves the scale after an optimizer step: backs off after an overflow, grows after {@link
     * Settings#growthInterval()} good steps in a row (never to infinity).
     *
     * @param overflow whether the step was skipped for non-finite gradients
     * @return whether the scale is still at or above the settings' floor
     */
    public boolean update(boolean overflow) {
        if (overflow) {
            scale *= settings.backoffFactor();
            goodSteps = 0;
            skippedSteps++;
            return scale >= settings.minScale();
        }
        skippedSteps = 0;
        if (++goodSteps >= settings.growthInterval()) {
            float grown = scale * settings.growthFactor();
            if (Float.isFinite(grown)) {
                scale = grown;
            }
            goodSteps = 0;
        }
        return true;
    }

    /**
     * How the scale starts and moves. The defaults are PyTorch's {@code GradScaler}'s: 65536,
     * doubled after 2000 good steps, halved at an overflow; and a floor of 1: below it the
     * gradients overflow float16 even unscaled, which no scale fixes.
     *
     * @param initialScale the first scale, positive
     * @param growthFactor the factor after {@code growthInterval} good steps, above 1
     * @param backoffFactor the factor after an overflow, in (0, 1)
     * @param growthInterval the good steps in a row before the scale grows, at least 1
     * @param minScale the floor: a scale backed off below it stops training, positive
     */
    public record Settings(
            float initialScale,
            float growthFactor,
            float backoffFactor,
            int growthInterval,
            float minScale) {

        /** The defaults. */
        public static final Settings DEFAULTS = new Settings(65536f, 2f, 0.5f, 2000, 1f);

        /**
         * Checks the values.
         *
         * @throws IllegalArgumentException naming the value out of range
         */
        public Settings {
            check(initialScale > 0 && Float.isFinite(initialScale), "initialScale", initialScale);
            check(growthFactor > 1 && Float.isFinite(growthFactor), "growthFactor", growthFactor);
            check(backoffFactor > 0 && backoffFactor < 1, "backoffFactor", backoffFactor);
            check(growthInterval >= 1, "growthInterval", growthInterval);
            check(minScale > 0 && minScale <= initialScale, "minScale", minScale);
        }

        /**
         * Returns these settings with another initial scale.
         *
         * @param initialScale the first scale
         * @return the settings
         */
        public Settings withInitialScale(float initialScale) {
            return new Settings(
                    initialScale, growthFactor, backoffFactor, growthInterval, minScale);
        }

        /**
         * Returns these settings with another growth interval.
         *
         * @param growthInterval the good steps in a row before the scale grows
         * @return the settings
         */
        public Settings withGrowthInterval(int growthInterval) {
            return new Settings(
                    initialScale, growthFactor, backoffFactor, growthInterval, minScale);
        }

        /**
         * Returns these settings with another floor.
         *
         * @param minScale the smallest scale training goes on with
         * @return the settings
         */
        public Settings withMinScale(float minScale) {
            return new Settings(
                    initialScale, growthFactor, backoffFactor, growthInterval, minScale);
        }

        private static void check(boolean valid, String name, Number value) {
            if (!valid) {
                throw new IllegalArgumentException(
                        "loss scaling: "
                                + name
                                + " = "
                                + value
                                + " is out of range (initialScale > 0, growthFactor > 1, 0 <"
                                + " backoffFactor < 1, growthInterval >= 1, 0 < minScale <="
                                + " initialScale)");
            }
        }
    }
}
