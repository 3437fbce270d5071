package ai.djl.fsdp.optim;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.tensor.OptimizerStates;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.optimizer.Optimizer;
import java.util.List;
import java.util.OptionalDouble;
import java.util.stream.Collectors;

/**
 * The optimizer step on shards: the user's DJL {@link Optimizer} (with its learning-rate {@code
 * Tracker}) updates each trainable flat parameter's shard with the shard's gradient, after optional
 * clipping of the global gradient norm.
 *
 * <p>Element-wise optimizers (SGD, Adam, AdamW, ...) give on a shard exactly what they give on the
 * whole parameter; their state is created per shard, so it is sharded too.
 */
public final class ShardedOptimizer {

    private final Optimizer optimizer;
    private final List<FlatParameter> trainable;
    private final ProcessGroup group;
    private final float maxGradNorm;
    private final boolean sharded;

    /**
     * Creates the step.
     *
     * @param optimizer the user's optimizer
     * @param trainable the flat parameters to update
     * @param group the ranks, to sum the squared norm over when gradients are sharded
     * @param maxGradNorm the largest global gradient norm, or a non-positive value for no clipping
     */
    public ShardedOptimizer(
            Optimizer optimizer,
            List<FlatParameter> trainable,
            ProcessGroup group,
            float maxGradNorm) {
        this.optimizer = optimizer;
        this.trainable = List.copyOf(trainable);
        this.group = group;
        this.maxGradNorm = maxGradNorm;
        this.sharded = this.trainable.stream().anyMatch(FlatParameter::isSharded);
    }

    /**
     * Measures the global gradient norm, clips the gradients to {@code maxGradNorm} (if asked),
     * updates every shard and zeroes the gradients. When the norm is not finite (a NaN or infinite
     * gradient on any rank), or {@code update} is false, no shard is updated: the gradients are
     * only zeroed, on every rank alike since the norm is the same everywhere.
     *
     * @param update false to skip the update (a loss scaler's overflow), the same on every rank
     * @return the global gradient norm before clipping; empty when nothing trains
     */
    public OptionalDouble step(boolean update) {
        if (trainable.isEmpty()) {
            return OptionalDouble.empty();
        }
        float norm = globalNorm();
        boolean apply = update && Float.isFinite(norm);
        if (apply && maxGradNorm > 0) {
            clip(norm);
        }
        for (FlatParameter flat : trainable) {
            if (apply) {
                optimizer.update(flat.getId(), flat.getShardToWrite(), flat.getGradient());
            }
            flat.zeroGradient();
        }
        return OptionalDouble.of(norm);
    }

    /** Returns this rank's shard gradients, in the order the step visits them. */
    public List<NDArray> getGradients() {
        return trainable.stream().map(FlatParameter::getGradient).toList();
    }

    /** Returns the bytes of the state the optimizer keeps for this rank's shards. */
    public long getStateBytes() {
        return OptimizerStates.bytes(
                optimizer,
                trainable.stream().map(FlatParameter::getId).collect(Collectors.toSet()));
    }

    /** Returns the norm of all of the model's gradients: one all-reduce of a scalar. */
    private float globalNorm() {
        try (NDManager scope =
                trainable.get(0).getShard().getManager().getParentManager().newSubManager()) {
            NDArray sumOfSquares = scope.zeros(new Shape(1));
            for (FlatParameter flat : trainable) {
                // An alias in the scope keeps the temporaries out of the shard's state manager.
                NDArray gradient = flat.getGradient().stopGradient();
                gradient.attach(scope);
                // An offloaded gradient is summed on the host; the sum joins the device's.
                NDArray square = gradient.square().sum().toType(DataType.FLOAT32, false);
                sumOfSquares.addi(square.toDevice(sumOfSquares.getDevice(), false));
            }
            // Replicated gradients already hold the global norm; shards hold one piece each.
            if (sharded && group.getSize() > 1) {
                group.allReduce(sumOfSquares, ReduceOp.SUM);
            }
            return (float) Math.sqrt(sumOfSquares.getFloat(0));
        }
    }

    /**
     * Scales the gradients so their global norm is at most {@code maxGradNorm}, as PyTorch does.
     */
    private void clip(float norm) {
        float coefficient = maxGradNorm / (norm + 1e-6f);
        if (coefficient < 1) {
            for (FlatParameter flat : trainable) {
                flat.getGradient().muli(coefficient);
            }
        }
    }
}
