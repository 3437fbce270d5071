package ai.djl.fsdp.optim;

import ai.djl.Device;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Stochastic gradient descent with PyTorch's formulas ({@code torch.optim.SGD}), on a whole
 * parameter or on a flat shard with per-element weight-decay and learning-rate factors:
 *
 * <pre>
 * g = g + wd * p
 * b = g at the first step, else momentum * b + (1 - dampening) * g
 * g = g + momentum * b (Nesterov), else b
 * p = p - lr * g
 * </pre>
 *
 * <p>DJL's {@code Sgd} keeps {@code -lr} times that buffer instead ({@code momentumStates}), which
 * is the same training only while the learning rate is fixed; this optimizer keeps PyTorch's
 * buffer, under its own name {@code momentumBuffers}, so a checkpoint of DJL's Sgd is refused with
 * the names of both rather than misread.
 */
public final class Sgd extends ElementwiseOptimizer {

    private final float momentum;
    private final float dampening;
    private final boolean nesterov;
    private final Map<String, Map<Device, NDArray>> momentumBuffers = new ConcurrentHashMap<>();

    private Sgd(Builder builder) {
        super(builder);
        momentum = builder.momentum;
        dampening = builder.dampening;
        nesterov = builder.nesterov;
    }

    /**
     * Returns a builder.
     *
     * @return the builder, with PyTorch's defaults: lr 1e-3, no momentum, no dampening, no weight
     *     decay
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    protected void apply(String parameterId, NDArray weight, NDArray grad, Step step) {
        addL2(grad, weight, step);
        NDArray direction = grad;
        if (momentum != 0f) {
            Device device = weight.getDevice();
            boolean first = !momentumBuffers.containsKey(parameterId);
            NDArray buffer =
                    withDefaultState(momentumBuffers, parameterId, device, k -> grad.duplicate());
            if (!first) {
                ScalarOps.muli(buffer, momentum);
                if (dampening == 0f) {
                    buffer.addi(grad);
                } else {
                    try (NDArray damped = ScalarOps.mul(grad, (float) (1 - decimal(dampening)))) {
                        buffer.addi(damped);
                    }
                }
            }
            if (nesterov) {
                try (NDArray ahead = ScalarOps.mul(buffer, momentum)) {
                    grad.addi(ahead);
                }
            } else {
                direction = buffer;
            }
        }
        try (NDArray update = ScalarOps.mul(direction, (float) -step.rate())) {
            weight.addi(scaleInPlace(update, step.learningRateScale(), 1f));
        }
    }

    /** Builds an {@link Sgd}. */
    public static final class Builder extends ElementwiseOptimizer.Builder<Builder> {

        private float momentum;
        private float dampening;
        private boolean nesterov;

        private Builder() {}

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * Sets the momentum (default 0, none).
         *
         * @param momentum the momentum, at least 0
         * @return this builder
         */
        public Builder optMomentum(float momentum) {
            this.momentum = momentum;
            return this;
        }

        /**
         * Sets the dampening of the gradient added to the momentum buffer (default 0).
         *
         * @param dampening the dampening
         * @return this builder
         */
        public Builder optDampening(float dampening) {
            this.dampening = dampening;
            return this;
        }

        /**
         * Sets whether to use Nesterov momentum (default false).
         *
         * @param nesterov whether to
         * @return this builder
         */
        public Builder optNesterov(boolean nesterov) {
            this.nesterov = nesterov;
            return this;
        }

        /**
         * Builds the optimizer.
         *
         * @return the optimizer
         * @throws IllegalArgumentException if the momentum is negative, or Nesterov is asked
         *     without momentum or with dampening (as PyTorch refuses)
         */
        public Sgd build() {
            if (momentum < 0f) {
                throw new IllegalArgumentException("Sgd's momentum must be >= 0: " + momentum);
            }
            if (nesterov && (momentum <= 0f || dampening != 0f)) {
                throw new IllegalArgumentException(
                        "Nesterov momentum needs a positive momentum and no dampening");
            }
            return new Sgd(this);
        }
    }
}
