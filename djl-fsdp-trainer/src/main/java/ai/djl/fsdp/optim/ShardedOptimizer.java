package ai.djl.fsdp.optim;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.fsdp.tensor.op.SumOfSquares;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.Pair;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.stream.Collectors;

/**
 * The optimizer step on shards: the user's DJL {@link Optimizer} (with its learning-rate {@code
 * Tracker}) updates each trainable flat parameter's shard with the shard's gradient, after optional
 * clipping of the global gradient norm.
 *
 * <p>Element-wise optimizers (SGD, Adam, AdamW, ...) give on a shard exactly what they give on the
 * whole parameter; their state is created per shard, so it is sharded too. An {@link
 * ElementwiseOptimizer} ({@link Adam}, {@link Sgd}: PyTorch's formulas) also takes each shard's
 * {@link ParameterGroups} factors, so weight decay and learning rate can differ between the
 * parameters a flat shard mixes; DJL's optimizers apply theirs to every element alike.
 */
public final class ShardedOptimizer implements AutoCloseable {

    private final Optimizer optimizer;
    private final List<FlatParameter> trainable;
    private final List<ParameterGroups.ShardFactors> factors;
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
     * @param groups the weight decay and learning-rate scale of each parameter
     * @param model the model's block, whose tree names the parameters for {@code groups}
     * @throws IllegalArgumentException if {@code groups} tells parameters apart but the optimizer
     *     is not an {@link ElementwiseOptimizer}
     */
    public ShardedOptimizer(
            Optimizer optimizer,
            List<FlatParameter> trainable,
            ProcessGroup group,
            float maxGradNorm,
            ParameterGroups groups,
            Block model) {
        this.optimizer = optimizer;
        this.trainable = List.copyOf(trainable);
        this.group = group;
        this.maxGradNorm = maxGradNorm;
        this.sharded = this.trainable.stream().anyMatch(FlatParameter::isSharded);
        checkGroups(optimizer, groups);
        if (groups == ParameterGroups.ALL) {
            factors = null;
        } else {
            Map<Parameter, Pair<String, Block>> owners = ParameterGroups.ownersOf(model);
            boolean decays = ((ElementwiseOptimizer) optimizer).hasWeightDecay();
            factors =
                    this.trainable.stream()
                            .map(flat -> groups.shardFactors(flat, owners, decays))
                            .toList();
        }
    }

    /**
     * Checks that the optimizer can apply the parameter groups.
     *
     * @param optimizer the optimizer
     * @param groups the groups
     * @throws IllegalArgumentException if {@code groups} tells parameters apart but the optimizer
     *     is not an {@link ElementwiseOptimizer}
     */
    public static void checkGroups(Optimizer optimizer, ParameterGroups groups) {
        if (groups != ParameterGroups.ALL && !(optimizer instanceof ElementwiseOptimizer)) {
            throw new IllegalArgumentException(
                    "Parameter groups need an optimizer that updates elements by group: "
                            + optimizer.getClass().getName()
                            + " applies one weight decay to all; use"
                            + " ai.djl.fsdp.optim.Adam.adamWBuilder(), Adam.adamBuilder() or"
                            + " Sgd.builder(), or drop the parameter groups");
        }
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
        for (int i = 0; i < trainable.size(); i++) {
            FlatParameter flat = trainable.get(i);
            if (apply) {
                update(flat, factors == null ? null : factors.get(i));
            }
            flat.zeroGradient();
        }
        return OptionalDouble.of(norm);
    }

    private void update(FlatParameter flat, ParameterGroups.ShardFactors shard) {
        if (shard == null) {
            optimizer.update(flat.getId(), flat.getShardToWrite(), flat.getGradient());
        } else {
            ((ElementwiseOptimizer) optimizer)
                    .update(
                            flat.getId(),
                            flat.getShardToWrite(),
                            flat.getGradient(),
                            shard.decay(),
                            shard.learningRateScale());
        }
    }

    /** Returns this rank's shard gradients, in the order the step visits them. */
    public List<NDArray> getGradients() {
        return trainable.stream().map(FlatParameter::getGradient).toList();
    }

    /**
     * Returns the bytes of the state the optimizer keeps for this rank's shards, with the
     * per-element factors of the parameter groups.
     */
    public long getStateBytes() {
        long groupBytes =
                factors == null
                        ? 0
                        : factors.stream().mapToLong(ParameterGroups.ShardFactors::bytes).sum();
        return groupBytes
                + OptimizerStates.bytes(
                        optimizer,
                        trainable.stream().map(FlatParameter::getId).collect(Collectors.toSet()));
    }

    /** Frees the parameter groups' per-element factors. */
    @Override
    public void close() {
        if (factors != null) {
            factors.forEach(ParameterGroups.ShardFactors::close);
        }
    }

    /** Returns the norm of all of the model's gradients: one all-reduce of a scalar. */
    private float globalNorm() {
        try (NDManager scope =
                trainable.get(0).getShard().getManager().getParentManager().newSubManager()) {
            NDList squares = new NDList(trainable.size());
            for (FlatParameter flat : trainable) {
                // Each gradient is summed where it lives; the sums are stacked on the first shard's
                // device.
                NDArray square =
                        SumOfSquares.of(flat.getGradient(), scope)
                                .toType(DataType.FLOAT32, false)
                                .toDevice(scope.getDevice(), false);
                squares.add(square);
            }
            NDArray sumOfSquares = NDArrays.stack(squares).sum(new int[] {0}, true);
            // Replicated gradients already hold the global norm; shards hold one piece each.
            if (sharded && group.getSize() > 1) {
                group.allReduce(sumOfSquares, ReduceOp.SUM);
            }
            // One element read as it is, not indexed first (getFloat(0) is one more libtorch call).
            return (float) Math.sqrt(sumOfSquares.toFloatArray()[0]);
        }
    }

    /**
     * Scales the gradients so their global norm is at most {@code maxGradNorm}, as PyTorch does.
     */
    private void clip(float norm) {
        float coefficient = maxGradNorm / (norm + 1e-6f);
        if (coefficient < 1) {
            for (FlatParameter flat : trainable) {
                ScalarOps.muli(flat.getGradient(), coefficient);
            }
        }
    }
}
