package ai.djl.fsdp.trainer;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ShardingMesh;
import ai.djl.fsdp.optim.ShardedOptimizer;
import ai.djl.training.optimizer.Optimizer;
import java.util.Map;

/**
 * A trainer's configuration, resolved once when the trainer is made and handed down from there to
 * the sharding ({@link ModelSharding}) and the training state ({@link ShardedTraining}): the
 * sharding settings and the trainer's options, checked against each other and the optimizer, and
 * the ranks laid out as the settings ask. Nothing below the trainer reads the settings' defaults or
 * the environment again.
 *
 * @param fsdp how the model is sharded
 * @param options how the trainer steps and starts
 * @param mesh the ranks laid out for sharding: one shard group of every rank, or hybrid shard
 *     groups replicated across; the trainer closes it
 */
record TrainingSetup(FsdpConfig fsdp, TrainerOptions options, ShardingMesh mesh) {

    /**
     * Checks the settings and lays the ranks out; the trainer calls it before the model is sharded,
     * so a refused combination leaves the model as it was. A collective under hybrid sharding (the
     * subgroups are split).
     *
     * @param fsdp how the model is sharded
     * @param options how the trainer steps and starts
     * @param optimizer the training configuration's optimizer
     * @param world the job's ranks
     * @param environment the process environment, read for {@code LOCAL_WORLD_SIZE} by hybrid
     *     sharding without a configured shard group size
     * @return the resolved configuration
     * @throws IllegalArgumentException if loss scaling is set without float16 mixed precision,
     *     communication is quantized without sharding, gradients are quantized with float16, or
     *     under hybrid sharding outside {@code scope=inter-node}, that scope is set without hybrid
     *     sharding or with weights, a shard group size is set without hybrid sharding, or parameter
     *     groups with an optimizer that cannot apply them
     */
    static TrainingSetup resolve(
            FsdpConfig fsdp,
            TrainerOptions options,
            Optimizer optimizer,
            ProcessGroup world,
            Map<String, String> environment) {
        ShardedOptimizer.checkGroups(optimizer, options.getParameterGroups());
        if (options.isLossScalingSet() && !fsdp.getMixedPrecision().needsLossScaling()) {
            throw new IllegalArgumentException(
                    "TrainerOptions.optLossScaling is for float16 mixed precision, but the"
                            + " FsdpConfig's mixed precision is "
                            + fsdp.getMixedPrecision()
                            + ": use FsdpConfig.optMixedPrecision(MixedPrecision.FP16), or drop"
                            + " the loss scaling settings");
        }
        if (fsdp.getShardGroupSize().isPresent() && !fsdp.isHybrid()) {
            throw new IllegalArgumentException(
                    "optShardGroupSize is for the hybrid strategies: set"
                            + " optShardingStrategy(ShardingStrategy.HYBRID_SHARD) or"
                            + " HYBRID_SHARD_ZERO2, or drop the shard group size");
        }
        if (fsdp.getCommunicationQuantization().isEnabled() && !fsdp.isSharded()) {
            throw new IllegalArgumentException(
                    "Communication quantization acts on the gathers and reduce-scatters of sharded"
                            + " parameters; NO_SHARD has neither (its gradients are all-reduced"
                            + " exactly): use FULL_SHARD or SHARD_GRAD_OP, or drop the setting");
        }
        checkScope(fsdp);
        boolean quantizedGradients = fsdp.getCommunicationQuantization().getGradients().isPresent();
        if (quantizedGradients && fsdp.getMixedPrecision().needsLossScaling()) {
            throw new IllegalArgumentException(
                    "Quantized gradients have not been run with float16's loss scaling (its"
                            + " overflow check against NaN-scaled blocks is untested): use bf16, or"
                            + " gradients=none");
        }
        return new TrainingSetup(fsdp, options, mesh(world, fsdp, environment));
    }

    /** Refuses a quantization scope that does not fit the strategy. */
    private static void checkScope(FsdpConfig fsdp) {
        CommunicationQuantization quantization = fsdp.getCommunicationQuantization();
        boolean gradients = quantization.getGradients().isPresent();
        if (quantization.getScope() == CommunicationQuantization.Scope.ALL) {
            if (gradients && fsdp.isHybrid()) {
                throw new IllegalArgumentException(
                        "Quantized gradients under hybrid sharding are quantized where they cross"
                                + " nodes: add scope=inter-node (the replicate groups' average),"
                                + " or use gradients=none");
            }
            return;
        }
        if (!fsdp.isHybrid()) {
            throw new IllegalArgumentException(
                    "scope=inter-node quantizes the average across hybrid sharding's replicate"
                            + " groups: use HYBRID_SHARD or HYBRID_SHARD_ZERO2, or scope=all");
        }
        if (quantization.getWeights().isPresent() || !gradients) {
            throw new IllegalArgumentException(
                    "Under hybrid sharding only gradients cross nodes (weights are gathered inside"
                            + " a node): with scope=inter-node give gradients=int8 or int4 and"
                            + " weights=none");
        }
    }

    /**
     * Lays {@code world}'s ranks out as {@code fsdp} asks: one shard group of every rank, or under
     * hybrid sharding shard groups of the configured size (by default {@code LOCAL_WORLD_SIZE}, the
     * ranks of one node) replicated across (a collective).
     */
    static ShardingMesh mesh(ProcessGroup world, FsdpConfig fsdp, Map<String, String> environment) {
        if (!fsdp.isHybrid()) {
            return ShardingMesh.flat(world);
        }
        int shardSize =
                fsdp.getShardGroupSize()
                        .orElseGet(
                                () ->
                                        DistributedEnv.fromVariables(environment)
                                                .getLocalWorldSize());
        return ShardingMesh.hybrid(world, shardSize);
    }
}
