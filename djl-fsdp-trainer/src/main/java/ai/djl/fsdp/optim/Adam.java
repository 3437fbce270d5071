package ai.djl.fsdp.optim;

import ai.djl.Device;
import ai.djl.fsdp.tensor.op.FusedAdam;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Adam and AdamW with PyTorch's formulas ({@code torch.optim.Adam}, {@code torch.optim.AdamW}), on
 * a whole parameter or on a flat shard with per-element weight-decay and learning-rate factors.
 * With the step {@code t}, the learning rate {@code lr} and the weight decay {@code wd}:
 *
 * <pre>
 * AdamW: p = p * (1 - lr * wd)            Adam: g = g + wd * p
 * m = m + (1 - beta1) * (g - m)
 * v = beta2 * v + (1 - beta2) * g * g
 * denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 * p = p - lr / (1 - beta1^t) * m / denom
 * </pre>
 *
 * <p>DJL's {@code Adam} and {@code AdamW} add {@code eps} to {@code sqrt(v)} before the bias
 * correction, so their {@code eps} weighs {@code 1 / sqrt(1 - beta2^t)} times more (about 32 at the
 * first step with beta2 0.999): the same training, other numbers. The moments are kept in the
 * fields DJL's Adam uses, {@code means} and {@code variances}, with the same meaning, so a
 * checkpoint written with DJL's AdamW resumes with this one.
 */
public final class Adam extends ElementwiseOptimizer {

    private final boolean decoupled;
    private final float beta1;
    private final float beta2;
    private final float epsilon;
    private final Map<String, Map<Device, NDArray>> means = new ConcurrentHashMap<>();
    private final Map<String, Map<Device, NDArray>> variances = new ConcurrentHashMap<>();

    private Adam(Builder builder) {
        super(builder);
        decoupled = builder.decoupled;
        beta1 = builder.beta1;
        beta2 = builder.beta2;
        epsilon = builder.epsilon;
    }

    /**
     * Returns a builder of AdamW ({@code torch.optim.AdamW}): decoupled weight decay, default 0.01.
     *
     * @return the builder, with PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8
     */
    public static Builder adamWBuilder() {
        return new Builder(true).optWeightDecays(0.01f);
    }

    /**
     * Returns a builder of Adam ({@code torch.optim.Adam}): L2 weight decay added to the gradient,
     * default 0.
     *
     * @return the builder, with PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8
     */
    public static Builder adamBuilder() {
        return new Builder(false);
    }

    @Override
    protected void apply(String parameterId, NDArray weight, NDArray grad, Step step) {
        Device device = weight.getDevice();
        NDArray mean = withDefaultState(means, parameterId, device, k -> weight.zerosLike());
        NDArray variance =
                withDefaultState(variances, parameterId, device, k -> weight.zerosLike());
        double b1 = decimal(beta1);
        double b2 = decimal(beta2);
        FusedAdam fused =
                step.learningRateScale().isUniform()
                        ? FusedAdam.of(weight, grad, mean, variance)
                        : null;
        if (fused != null) {
            applyFused(fused, weight, grad, step, b1, b2);
            return;
        }
        if (decoupled) {
            decayDecoupled(weight, step);
        } else {
            addL2(grad, weight, step);
        }
        try (NDArray square = ScalarOps.mul(grad, (float) (1 - b2)).muli(grad)) {
            ScalarOps.muli(variance, beta2).addi(square);
        }
        // The gradient is not needed after this: its memory holds (1 - beta1) * (g - m).
        mean.addi(ScalarOps.muli(grad.subi(mean), (float) (1 - b1)));
        double correction1 = 1 - Math.pow(b1, step.count());
        double correction2 = 1 - Math.pow(b2, step.count());
        try (NDArray denominator =
                        ScalarOps.addi(
                                ScalarOps.divi(variance.sqrt(), (float) Math.sqrt(correction2)),
                                epsilon);
                NDArray update = mean.div(denominator)) {
            weight.addi(
                    scaleInPlace(
                            update,
                            step.learningRateScale(),
                            (float) (-step.rate() / correction1)));
        }
    }

    /**
     * One step in libtorch's fused AdamW kernel, with a learning rate common to every element: a
     * decoupled weight decay that differs between elements is applied to the weights first, and
     * Adam's L2 term is added to the gradient first; the kernel then decays nothing.
     */
    private void applyFused(
            FusedAdam fused, NDArray weight, NDArray grad, Step step, double b1, double b2) {
        ElementFactor decay = step.decay();
        double weightDecay = 0;
        if (!decoupled) {
            addL2(grad, weight, step);
        } else if (decay.isUniform()) {
            weightDecay = step.weightDecay() * decay.getValue();
        } else {
            decayDecoupled(weight, step);
        }
        fused.update(
                step.count(),
                step.rate() * step.learningRateScale().getValue(),
                b1,
                b2,
                weightDecay,
                decimal(epsilon));
    }

    /** {@code p = p * (1 - lr * wd * decay * scale)}, PyTorch's {@code p.mul_(1 - lr * wd)}. */
    private static void decayDecoupled(NDArray weight, Step step) {
        double rateTimesDecay = step.rate() * step.weightDecay();
        ElementFactor decay = step.decay();
        ElementFactor scale = step.learningRateScale();
        if (rateTimesDecay == 0) {
            return;
        }
        if (decay.isUniform() && scale.isUniform()) {
            double factor = decay.getValue() * (double) scale.getValue();
            if (factor != 0) {
                ScalarOps.muli(weight, (float) (1 - rateTimesDecay * factor));
            }
            return;
        }
        NDArray product =
                decay.isUniform()
                        ? ScalarOps.mul(
                                scale.getPerElement(), (float) (-rateTimesDecay * decay.getValue()))
                        : scaleInPlace(
                                ScalarOps.mul(decay.getPerElement(), (float) -rateTimesDecay),
                                scale,
                                1f);
        try (NDArray multiplier = ScalarOps.addi(product, 1f)) {
            weight.muli(multiplier);
        }
    }

    /** Builds an {@link Adam}. */
    public static final class Builder extends ElementwiseOptimizer.Builder<Builder> {

        private final boolean decoupled;
        private float beta1 = 0.9f;
        private float beta2 = 0.999f;
        private float epsilon = 1e-8f;

        private Builder(boolean decoupled) {
            this.decoupled = decoupled;
        }

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the decay rates of the moments (default 0.9 and 0.999).
         *
         * @param beta1 the first moment's, in [0, 1)
         * @param beta2 the second moment's, in [0, 1)
         * @return this builder
         */
        public Builder optBetas(float beta1, float beta2) {
            for (float beta : new float[] {beta1, beta2}) {
                if (!(beta >= 0f && beta < 1f)) {
                    throw new IllegalArgumentException(
                            "Adam's betas must lie in [0, 1), got " + beta1 + " and " + beta2);
                }
            }
            this.beta1 = beta1;
            this.beta2 = beta2;
            return this;
        }

        /**
         * Sets the epsilon added to the bias-corrected {@code sqrt(v)} (default 1e-8).
         *
         * @param epsilon the epsilon, positive
         * @return this builder
         */
        public Builder optEpsilon(float epsilon) {
            if (!(epsilon > 0f)) {
                throw new IllegalArgumentException("Adam's epsilon must be positive: " + epsilon);
            }
            this.epsilon = epsilon;
            return this;
        }

        /**
         * Builds the optimizer.
         *
         * @return the optimizer
         */
        public Adam build() {
            return new Adam(this);
        }
    }
}
