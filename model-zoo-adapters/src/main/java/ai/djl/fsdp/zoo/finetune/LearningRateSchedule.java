package ai.djl.fsdp.zoo.finetune;

import ai.djl.training.tracker.Tracker;
import java.util.Locale;

/**
 * Hugging Face's learning-rate schedules ({@code --lr_scheduler_type}) as a DJL {@link Tracker}: a
 * linear warm-up from 0 over {@code warmupSteps}, then {@code cosine} (half a cosine to 0), {@code
 * linear} (to 0), {@code constant}, or {@code constant_with_warmup}. As in Hugging Face, optimizer
 * update {@code n} (DJL counts from 1) uses the value at step {@code n - 1}, so with warm-up the
 * first update's rate is 0.
 */
final class LearningRateSchedule implements Tracker {

    /** The schedule's shape after warm-up. */
    public enum Type {
        COSINE,
        LINEAR,
        CONSTANT,
        CONSTANT_WITH_WARMUP;

        /**
         * Parses Hugging Face's spelling.
         *
         * @param name {@code cosine}, {@code linear}, {@code constant} or {@code
         *     constant_with_warmup}
         * @return the type
         */
        public static Type of(String name) {
            try {
                return valueOf(name.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "--lr_scheduler_type "
                                + name
                                + " is not one of cosine, linear, constant,"
                                + " constant_with_warmup");
            }
        }
    }

    private final Type type;
    private final float peak;
    private final int warmupSteps;
    private final int totalSteps;

    /**
     * Creates a schedule.
     *
     * @param type the shape
     * @param peak the learning rate after warm-up
     * @param warmupSteps steps of linear warm-up (ignored by {@code constant})
     * @param totalSteps the optimizer steps of the run
     */
    public LearningRateSchedule(Type type, float peak, int warmupSteps, int totalSteps) {
        this.type = type;
        this.peak = peak;
        this.warmupSteps = type == Type.CONSTANT ? 0 : warmupSteps;
        this.totalSteps = totalSteps;
    }

    @Override
    public float getNewValue(int numUpdate) {
        return valueAt(Math.max(0, numUpdate - 1));
    }

    /**
     * Returns the learning rate of a 0-based step.
     *
     * @param step the step
     * @return the rate
     */
    public float valueAt(int step) {
        if (step < warmupSteps) {
            return peak * step / warmupSteps;
        }
        double progress =
                Math.min(
                        1.0, (step - warmupSteps) / (double) Math.max(1, totalSteps - warmupSteps));
        switch (type) {
            case COSINE:
                return (float) (peak * 0.5 * (1 + Math.cos(Math.PI * progress)));
            case LINEAR:
                return (float) (peak * (1 - progress));
            default:
                return peak;
        }
    }
}
