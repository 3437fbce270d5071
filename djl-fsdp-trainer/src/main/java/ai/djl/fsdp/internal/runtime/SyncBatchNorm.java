package ai.djl.fsdp.internal.runtime;

import ai.djl.Device;
import ai.djl.fsdp.reflect.BatchNormSettings;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * Stands in a parent for a DJL {@code BatchNorm} when the batch statistics are synchronized ({@code
 * FsdpConfig.optSyncBatchNorm}), PyTorch's {@code SyncBatchNorm}: a training forward normalizes
 * each rank's slice with the mean and variance of the global batch (every rank's slice) and updates
 * the running statistics with them, and its backward is that of the global batch's normalization
 * ({@link NormCall}). Inference, parameters, children and serialization are the wrapped block's:
 * the model saves, loads and predicts as with DJL's BatchNorm.
 */
final class SyncBatchNorm extends DelegatingBlock {

    private final BatchNormSettings settings;
    private final Parameter gamma;
    private final Parameter beta;
    private final Parameter runningMean;
    private final Parameter runningVar;
    private final Collectives collectives;
    private final ShardedPasses passes;

    SyncBatchNorm(BatchNorm block, Collectives collectives, ShardedPasses passes) {
        super(block);
        settings = BatchNormSettings.of(block);
        gamma = parameterOf(block, Parameter.Type.GAMMA);
        beta = parameterOf(block, Parameter.Type.BETA);
        runningMean = parameterOf(block, Parameter.Type.RUNNING_MEAN);
        runningVar = parameterOf(block, Parameter.Type.RUNNING_VAR);
        this.collectives = collectives;
        this.passes = passes;
    }

    private static Parameter parameterOf(BatchNorm block, Parameter.Type type) {
        return block.getDirectParameters().values().stream()
                .filter(p -> p.getType() == type)
                .findFirst()
                .orElseThrow(
                        () ->
                                new IllegalStateException(
                                        "DJL's BatchNorm has no parameter of type " + type));
    }

    @Override
    public NDList forward(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        if (!training) {
            return inner().forward(parameterStore, inputs, false, params);
        }
        NDArray input = inputs.singletonOrThrow();
        NDManager manager = input.getManager();
        Device device = input.getDevice();
        int axis = settings.axisOf(input.getShape().dimension());
        NDArray normalized;
        NDArray inverseStd;
        long count;
        try (NDManager scope = manager.newSubManager()) {
            NDArray x = Precision.FLOAT32.cast(input.stopGradient());
            x.attach(scope);
            NDArray moments = BatchStatistics.localMoments(x, axis);
            NDArray gathered = collectives.gatherStatistics(moments);
            BatchStatistics statistics = BatchStatistics.combine(gathered, x, axis);
            count = statistics.count();
            updateRunning(parameterStore, device, statistics);
            inverseStd = statistics.inverseStd(settings.epsilon());
            normalized = x.sub(statistics.mean()).mul(inverseStd);
            inverseStd.attach(manager);
            normalized.attach(manager);
        }
        NDArray typed = Precision.castLike(normalized, input);
        NDArray computedWith = typed;
        if (passes.recordsNorms()) {
            computedWith = typed.stopGradient();
            computedWith.setRequiresGradient(true);
            passes.record(new NormCall(input, computedWith, normalized, inverseStd, count, axis));
        }
        Shape shape = BatchStatistics.channelShape(input.getShape(), axis);
        NDArray scale = parameterStore.getValue(gamma, device, true).reshape(shape);
        NDArray shift = parameterStore.getValue(beta, device, true).reshape(shape);
        return new NDList(computedWith.mul(scale).add(shift));
    }

    /**
     * {@code running = momentum * running + (1 - momentum) * batch}, in place, with the unbiased
     * variance, as DJL's BatchNorm (PyTorch's, whose momentum is DJL's {@code 1 - momentum}).
     */
    private void updateRunning(
            ParameterStore parameterStore, Device device, BatchStatistics statistics) {
        float momentum = settings.momentum();
        update(parameterStore.getValue(runningMean, device, true), statistics.mean(), momentum);
        update(
                parameterStore.getValue(runningVar, device, true),
                statistics.unbiasedVariance(),
                momentum);
    }

    private static void update(NDArray running, NDArray batch, float momentum) {
        NDArray typed = Precision.castLike(batch.reshape(running.getShape()), running);
        try (NDArray share = ScalarOps.mul(typed, 1 - momentum)) {
            ScalarOps.muli(running, momentum).addi(share);
        }
    }

    @Override
    public String toString() {
        return "SyncBatchNorm: " + inner();
    }
}
