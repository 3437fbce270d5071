package ai.djl.fsdp.trainer;

import ai.djl.fsdp.checkpoint.Checkpointing;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.ShardingMesh;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.internal.runtime.FsdpParameterStore;
import ai.djl.fsdp.internal.runtime.ShardedModel;
import ai.djl.fsdp.optim.LossScaler;
import ai.djl.fsdp.optim.ShardedOptimizer;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.metrics.MeteredProcessGroup;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.training.optimizer.Optimizer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalDouble;

/**
 * The state of an {@link FsdpTrainer} once its model is sharded: the sharded model and the store
 * blocks read it through, the optimizer step on the shards (behind a loss scaler in float16), the
 * step counters and the checkpoints of all of it.
 */
final class ShardedTraining implements AutoCloseable {

    /** How long rank 0 waits for the other ranks' checkpoint files. */
    private static final Duration CHECKPOINT_TIMEOUT = Duration.ofMinutes(30);

    private final MeteredProcessGroup group;
    private final MeteredProcessGroup across;
    private final TrainerOptions options;
    private final Optimizer optimizer;
    private final ShardedModel model;
    private final FsdpParameterStore parameterStore;
    private final ShardedOptimizer shardedOptimizer;
    private final Checkpointing checkpointing;
    private final LossScaler scaler;
    private final TrainingState state = new TrainingState();
    private final boolean cpuOffload;
    private final long initPeakBytes;
    private int microBatches;
    private SentBytes sentLastStep = SentBytes.NONE;
    private long sentAcrossBytesLastStep;
    private long waitNanosLastStep;
    private OptionalDouble lastGradNorm = OptionalDouble.empty();
    private int nonFiniteSteps;
    private boolean summedStep;

    /**
     * The micro-batches of the current step: the accumulation steps, or fewer (an epoch's last).
     */
    private int stepMicroBatches;

    ShardedTraining(
            Block block,
            ModelSharding.Sharded sharding,
            TrainingSetup setup,
            MeteredProcessGroup group,
            Optimizer optimizer,
            NDManager manager) {
        FsdpConfig config = setup.fsdp();
        ShardingMesh mesh = setup.mesh();
        this.group = group;
        // The mesh was split from the metered group: its subgroups are metered too.
        across = (MeteredProcessGroup) mesh.getReplicateGroup().orElse(null);
        this.options = setup.options();
        this.stepMicroBatches = options.getGradientAccumulationSteps();
        this.optimizer = optimizer;
        scaler =
                config.getMixedPrecision().needsLossScaling()
                        ? new LossScaler(options.getLossScaling(), group)
                        : null;
        model = sharding.model();
        initPeakBytes = sharding.initPeakBytes();
        cpuOffload = config.isCpuOffload();
        parameterStore = new FsdpParameterStore(manager, model);
        shardedOptimizer =
                new ShardedOptimizer(
                        optimizer,
                        model.getFlatParameters().stream()
                                .filter(FlatParameter::isTrainable)
                                .toList(),
                        // Replicas hold the same averaged shards: each distinct shard counts once.
                        mesh.getShardGroup(),
                        options.getMaxGradNorm(),
                        options.getParameterGroups(),
                        block);
        checkpointing =
                new Checkpointing(
                        group,
                        model.getFlatParameters(),
                        model.getBuffers().getBuffers(),
                        StateDict.parameters(block),
                        optimizer,
                        CHECKPOINT_TIMEOUT);
        // The setup's broadcasts are not a step's traffic.
        group.takeSentBytes();
        group.takeWaitNanos();
        takeAcrossBytes();
    }

    ShardedModel getModel() {
        return model;
    }

    FsdpParameterStore getParameterStore() {
        return parameterStore;
    }

    /** See {@link FsdpTrainer#countStepItems(long, int)}. */
    long countStepItems(long localItems, int stepMicroBatches) {
        int most = options.getGradientAccumulationSteps();
        if (stepMicroBatches < 1 || stepMicroBatches > most) {
            throw new IllegalArgumentException(
                    "a step of "
                            + stepMicroBatches
                            + " micro-batches: a step takes 1 to the gradient accumulation steps ("
                            + most
                            + ")");
        }
        if (microBatches != 0) {
            throw new IllegalStateException(
                    "countStepItems starts an optimizer step, but "
                            + microBatches
                            + " micro-batches of the current step are already trained: call it"
                            + " before the step's first forward");
        }
        long items = localItems;
        if (group.getSize() > 1) {
            try (NDManager scope = NDManager.newBaseManager(group.getDevice())) {
                NDArray count = scope.create(new long[] {localItems});
                group.allReduce(count, ReduceOp.SUM);
                items = count.getLong(0);
            }
        }
        summedStep = true;
        this.stepMicroBatches = stepMicroBatches;
        return items;
    }

    void backward(NDArray loss) {
        // The reduction averages over the ranks; accumulation divides by k: a summed step (the
        // global token mean) undoes the first and skips the second.
        float scale = summedStep ? group.getSize() : 1f / options.getGradientAccumulationSteps();
        if (scaler == null) {
            model.getPasses().backward(loss, parameterStore, scale);
            return;
        }
        try (NDArray scaled = scaler.scale(loss)) {
            model.getPasses().backward(scaled, parameterStore, scale);
        }
    }

    void zeroGradients() {
        model.getFlatParameters().forEach(FlatParameter::zeroGradient);
    }

    /** Counts a micro-batch; returns true when it completed an optimizer step, now taken. */
    boolean step() {
        if (++microBatches < stepMicroBatches) {
            return false;
        }
        boolean overflow = scaler != null && scaler.unscale(shardedOptimizer.getGradients());
        lastGradNorm = shardedOptimizer.step(!overflow);
        microBatches = 0; // only after a step that completed: a failed one is no step boundary
        summedStep = false;
        stepMicroBatches = options.getGradientAccumulationSteps();
        model.getPasses().endStep();
        state.setStep(state.getStep() + 1);
        sentLastStep = group.takeSentBytes();
        sentAcrossBytesLastStep = takeAcrossBytes();
        waitNanosLastStep = group.takeWaitNanos();
        double norm = lastGradNorm.orElse(0);
        if (scaler != null && !scaler.update(overflow)) {
            throw NonFiniteGradientException.lossScaleCollapsed(
                    state.getStep(),
                    norm,
                    scaler.getSkippedSteps(),
                    scaler.getScale(),
                    scaler.getSettings().minScale());
        }
        // A scaler's overflow is how float16 finds its scale, not a failure of the step.
        nonFiniteSteps = Double.isFinite(norm) || overflow ? 0 : nonFiniteSteps + 1;
        if (nonFiniteSteps >= options.getMaxNonFiniteSteps()) {
            throw new NonFiniteGradientException(state.getStep(), norm, nonFiniteSteps);
        }
        return true;
    }

    private long takeAcrossBytes() {
        return across == null ? 0 : across.takeOwnSentBytes();
    }

    boolean isAtStepBoundary() {
        return microBatches == 0;
    }

    OptionalDouble getLastGradNorm() {
        return lastGradNorm;
    }

    OptionalDouble getLossScale() {
        return scaler == null ? OptionalDouble.empty() : OptionalDouble.of(scaler.getScale());
    }

    ShardingStats getStats() {
        return ShardingStats.of(
                model.getFlatParameters(),
                shardedOptimizer.getStateBytes(),
                sentLastStep,
                sentAcrossBytesLastStep,
                waitNanosLastStep);
    }

    MemoryStats getMemoryStats() {
        ShardingStats stats = getStats();
        return new MemoryStats(
                cpuOffload,
                stats.parameterBytes(),
                stats.gradientBytes(),
                stats.optimizerStateBytes(),
                model.getPasses().getPeakGatheredBytes(),
                initPeakBytes);
    }

    TrainingState getState() {
        state.setUpdateCounts(OptimizerStates.updateCounts(optimizer));
        if (scaler != null) {
            state.setLossScale(scaler.getScale(), scaler.getGoodSteps());
        }
        return state;
    }

    void saveCheckpoint(Path directory, boolean async, int keepNewest) throws IOException {
        if (microBatches != 0) {
            throw new IllegalStateException(
                    "A checkpoint is saved between optimizer steps; "
                            + microBatches
                            + " micro-batches of the current step are accumulated");
        }
        checkpointing.save(directory, getState(), async, keepNewest);
    }

    void awaitCheckpoint() throws IOException {
        checkpointing.await();
    }

    void loadCheckpoint(Path directory) throws IOException {
        TrainingState loaded = checkpointing.load(directory);
        state.setStep(loaded.getStep());
        state.setEpoch(loaded.getEpoch());
        state.getExtras().clear();
        state.getExtras().putAll(loaded.getExtras());
        if (scaler != null && loaded.getLossScale() != null) {
            // A run saved without loss scaling (bf16, fp32) resumes at the initial scale.
            scaler.restore(loaded.getLossScale(), loaded.getLossScaleGoodSteps());
        }
        microBatches = 0;
        stepMicroBatches = options.getGradientAccumulationSteps();
        model.getPasses().setStep(loaded.getStep());
    }

    /** Waits for a checkpoint in flight, then gathers the model back (or not) and frees all. */
    @Override
    public void close() {
        try (shardedOptimizer) {
            checkpointing.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (options.isGatherOnClose()) {
                model.unshard();
            } else {
                model.restoreBlockTree();
            }
            model.close();
        }
    }
}
