package ai.djl.fsdp.optim;

import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import ai.djl.training.tracker.Tracker;
import java.util.Objects;

/**
 * A DJL {@link Optimizer} whose update is element-wise, with PyTorch's formulas, and which takes a
 * weight-decay and a learning-rate factor per element: so one flat shard, which mixes a unit's
 * weights, biases and normalization weights, can be updated as PyTorch updates several parameter
 * groups. {@link ShardedOptimizer} passes each shard's factors ({@link ParameterGroups}); DJL's own
 * {@link #update(String, NDArray, NDArray)} applies the optimizer's weight decay and learning rate
 * to every element.
 *
 * <p>The state is kept per parameter id in fields of type {@code Map<String, Map<Device,
 * NDArray>>}, as DJL's optimizers keep it, so checkpoints save and restore it by field name.
 */
public abstract class ElementwiseOptimizer extends Optimizer {

    private final ParameterTracker learningRate;

    /**
     * Creates the optimizer.
     *
     * @param builder the builder, with the learning rate and the weight decay
     */
    protected ElementwiseOptimizer(Builder<?> builder) {
        super(builder);
        if (clipGrad > 0) {
            throw new IllegalArgumentException(
                    "optClipGrad clips each element, which PyTorch's optimizers do not: clip the"
                            + " global norm with TrainerOptions.optMaxGradNorm instead");
        }
        this.learningRate = builder.learningRate;
    }

    /** Returns whether the optimizer decays weights at all (its weight decay is not 0). */
    public boolean hasWeightDecay() {
        return getWeightDecay() != 0f;
    }

    /**
     * {@inheritDoc}
     *
     * <p>As DJL's own optimizers do, this zeroes {@code weight}'s gradient afterwards.
     */
    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        update(parameterId, weight, grad, ElementFactor.ONE, ElementFactor.ONE);
        Autograd.zeroGradient(weight);
    }

    /**
     * Updates {@code weight} in place from {@code grad}, the weight decay of each element scaled by
     * {@code decay} and its learning rate by {@code learningRateScale}.
     *
     * @param parameterId the id the state is kept under
     * @param weight the weights, updated in place
     * @param grad the gradient, which the update may overwrite
     * @param decay the factor of the weight decay, per element (0 for none)
     * @param learningRateScale the factor of the learning rate, per element
     */
    public final void update(
            String parameterId,
            NDArray weight,
            NDArray grad,
            ElementFactor decay,
            ElementFactor learningRateScale) {
        int count = updateCount(parameterId);
        float rate = learningRate.getNewValue(parameterId, count);
        float weightDecay = getWeightDecay();
        if (!Float.isFinite(rate) || !Float.isFinite(weightDecay)) {
            throw new IllegalStateException(
                    "The learning rate ("
                            + rate
                            + ") or the weight decay ("
                            + weightDecay
                            + ") is not finite: check the schedule and the optimizer's settings");
        }
        if (rescaleGrad != 1f) {
            ScalarOps.muli(grad, rescaleGrad);
        }
        apply(
                parameterId,
                weight,
                grad,
                new Step(count, decimal(rate), decimal(weightDecay), decay, learningRateScale));
    }

    /**
     * Applies one step of the formula.
     *
     * @param parameterId the id the state is kept under
     * @param weight the weights, updated in place
     * @param grad the gradient, which the update may overwrite
     * @param step the step's settings
     */
    protected abstract void apply(String parameterId, NDArray weight, NDArray grad, Step step);

    /**
     * The settings of one update.
     *
     * @param count the update count of the parameter id, from 1
     * @param rate the learning rate, as the decimal it was written as ({@link #decimal})
     * @param weightDecay the weight decay, likewise
     * @param decay the factor of the weight decay per element
     * @param learningRateScale the factor of the learning rate per element
     */
    protected record Step(
            int count,
            double rate,
            double weightDecay,
            ElementFactor decay,
            ElementFactor learningRateScale) {}

    /**
     * Multiplies {@code array} in place by {@code factor} times {@code scalar}.
     *
     * @param array the array
     * @param factor the per-element factor
     * @param scalar the common factor
     * @return {@code array}
     */
    protected static NDArray scaleInPlace(NDArray array, ElementFactor factor, float scalar) {
        if (factor.isUniform()) {
            float product = factor.getValue() * scalar;
            return product == 1f ? array : ScalarOps.muli(array, product);
        }
        array.muli(factor.getPerElement());
        return scalar == 1f ? array : ScalarOps.muli(array, scalar);
    }

    /**
     * Adds {@code weightDecay * decay * weight} to {@code grad} in place: L2 weight decay, as
     * PyTorch's Adam and SGD apply it ({@code grad = grad + weight_decay * param}).
     *
     * @param grad the gradient, changed in place
     * @param weight the weights
     * @param step the weight decay and its factor per element
     */
    protected static void addL2(NDArray grad, NDArray weight, Step step) {
        ElementFactor decay = step.decay();
        if (step.weightDecay() == 0 || decay.isUniform() && decay.getValue() == 0f) {
            return;
        }
        try (NDArray term =
                scaleInPlace(ScalarOps.mul(weight, (float) step.weightDecay()), decay, 1f)) {
            grad.addi(term);
        }
    }

    /**
     * Returns the decimal a float was written as, as a double: {@code 0.9f} gives {@code 0.9}, not
     * {@code 0.8999999761581421}. Coefficients such as {@code 1 - beta1} and {@code beta2^t} are
     * then computed from the same double a Python script's literal {@code 0.9} holds.
     *
     * @param value the float
     * @return the shortest decimal that reads back as {@code value}, as a double
     */
    protected static double decimal(float value) {
        return Double.parseDouble(Float.toString(value));
    }

    /**
     * Builds an element-wise optimizer: the learning rate and, from DJL's builder, the weight
     * decay.
     *
     * @param <T> the concrete builder
     */
    public abstract static class Builder<T extends Builder<T>> extends OptimizerBuilder<T> {

        private ParameterTracker learningRate = Tracker.fixed(1e-3f);

        /**
         * Sets the learning rate, a schedule by update count (default fixed 1e-3, as PyTorch's).
         *
         * @param learningRate the tracker
         * @return this builder
         */
        public T optLearningRateTracker(ParameterTracker learningRate) {
            this.learningRate = Objects.requireNonNull(learningRate, "learningRate");
            return self();
        }
    }
}
