package ai.djl.fsdp.trainer;

import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ModelStateWriter;
import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.checkpoint.UnitVisitor;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.internal.runtime.ShardedModel;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.Pair;
import ai.djl.util.PairList;
import java.io.IOException;
import java.nio.file.Path;
import java.util.OptionalDouble;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A DJL {@link Trainer} that trains its model with Fully Sharded Data Parallel across the ranks of
 * a {@link ProcessGroup}. {@code EasyTrain.fit}, {@code trainBatch}, {@code evaluateDataset} and
 * DJL's training listeners use it as any trainer; get one from {@link
 * FullyShardedDataParallel#newTrainer}.
 *
 * <p>The model is sharded once its parameters are initialized ({@link #initialize} or a loaded
 * model). {@link #iterateDataset} yields this rank's slice of each global batch. {@link #step()}
 * counts micro-batches and runs the sharded optimizer step on every {@code k}-th call ({@code k}
 * the gradient accumulation steps). {@link #close()} gathers the trained parameters back into the
 * model on every rank and restores its block tree, so the model can be saved or used as usual; a
 * model larger than one rank's memory is saved before instead, one unit at a time ({@link
 * #forEachUnitGathered}).
 *
 * <p>The evaluators ({@link #getEvaluators}) accumulate over the global batch on every rank; a
 * listener's {@code onTrainingBatch} and {@code onValidationBatch} see this rank's slice of it; a
 * figure of the program's own is combined with {@link #allReduce(double, ReduceOp)}.
 */
public class FsdpTrainer extends RankTrainer {

    private final TrainingSetup setup;
    private final RankScopedTrainingConfig rankConfig;
    private final Optimizer optimizer;
    private ShardedTraining sharded;

    FsdpTrainer(
            Model model,
            RankScopedTrainingConfig trainingConfig,
            ProcessGroup group,
            FsdpConfig config,
            TrainerOptions options) {
        super(model, trainingConfig, group);
        this.rankConfig = trainingConfig;
        this.optimizer = trainingConfig.getOptimizer();
        setup = TrainingSetup.resolve(config, options, optimizer, group(), System.getenv());
        try {
            // What Model.newTrainer does before constructing DJL's trainer.
            for (Pair<Initializer, Predicate<Parameter>> pair : trainingConfig.getInitializers()) {
                if (pair.getKey() != null && pair.getValue() != null) {
                    model.getBlock().setInitializer(pair.getKey(), pair.getValue());
                }
            }
            if (model.getBlock().isInitialized()) {
                shard(ModelSharding.shard(model.getBlock(), setup, getManager()));
            }
        } catch (RuntimeException | Error e) {
            // No trainer to close: free the subgroups' rings now.
            setup.mesh().close();
            throw e;
        }
    }

    /**
     * Initializes the model's parameters for inputs of these shapes one FSDP unit at a time,
     * keeping this rank's shards of each unit before the next is initialized (see {@link
     * ai.djl.fsdp.internal.runtime.UnitInitialization}).
     */
    @Override
    public void initialize(Shape... shapes) {
        if (sharded != null) {
            throw new IllegalStateException("The model is already initialized and sharded");
        }
        Block block = getModel().getBlock();
        shard(
                ModelSharding.initialize(
                        block,
                        onRankDevice(getModel().getNDManager()),
                        getModel().getDataType(),
                        shapes,
                        setup,
                        getManager()));
    }

    private void shard(ModelSharding.Sharded sharding) {
        sharded =
                new ShardedTraining(
                        getModel().getBlock(), sharding, setup, group(), optimizer, getManager());
    }

    /** Whether the model is sharded: false before the start, or after a start that failed. */
    boolean isSharded() {
        return sharded != null;
    }

    ShardedTraining sharded() {
        if (sharded == null) {
            throw new IllegalStateException(
                    "The model's parameters are not initialized: call trainer.initialize("
                            + "inputShapes) before training");
        }
        return sharded;
    }

    @Override
    public GradientCollector newGradientCollector() {
        return new FsdpGradientCollector(super.newGradientCollector(), this);
    }

    @Override
    public NDList forward(NDList input) {
        return run(input, true, store -> getModel().getBlock().forward(store, input, true));
    }

    @Override
    public NDList forward(NDList data, NDList labels) {
        return run(data, true, store -> getModel().getBlock().forward(store, data, labels, null));
    }

    @Override
    public NDList evaluate(NDList input) {
        return evaluate(input, null);
    }

    /**
     * Runs the model's forward for inference, as {@link #evaluate(NDList)}, with parameters for the
     * block's call ({@link ai.djl.nn.Block#forward(ParameterStore, NDList, boolean, PairList)}): a
     * language model's key-value cache, for one. A collective: every rank calls it, as many times,
     * each gathering every unit once; the ranks' inputs may differ in shape.
     *
     * @param input the model's input
     * @param params the block's call parameters, or null
     * @return the outputs
     */
    public NDList evaluate(NDList input, PairList<String, Object> params) {
        return run(
                input, false, store -> getModel().getBlock().forward(store, input, false, params));
    }

    private NDList run(NDList data, boolean training, Function<ParameterStore, NDList> pass) {
        long begin = System.nanoTime();
        try {
            return ForwardPass.run(sharded(), data, training, pass);
        } finally {
            if (training) {
                addMetric("forward", begin);
            }
        }
    }

    /**
     * Starts an optimizer step whose loss is a sum over items (target tokens) divided by the number
     * of items of the whole step, over all ranks and all its micro-batches: the global token mean
     * of Hugging Face's Trainer ({@code num_items_in_batch}), where a mean of per-rank or
     * per-micro-batch means would weigh a token of a short batch more than one of a long batch.
     * Sums this rank's count over the ranks (one all-reduce of a number) and returns it; until the
     * step completes, backward sums the ranks' and micro-batches' gradients instead of averaging
     * them, so each micro-batch's loss is {@code (its sum) / (the returned count)}. A collective:
     * every rank calls it, at the start of the step, before its first micro-batch.
     *
     * @param localItems the items of this rank's micro-batches of the step
     * @return the items of the step over all ranks
     * @throws IllegalStateException if micro-batches of the step were already trained
     */
    public long countStepItems(long localItems) {
        return countStepItems(localItems, getTrainerOptions().getGradientAccumulationSteps());
    }

    /**
     * As {@link #countStepItems(long)}, for a step of {@code microBatches} micro-batches: fewer
     * than the gradient accumulation steps for an epoch's last, which Hugging Face's Trainer takes
     * over the batches left; the step is taken at its last micro-batch's {@link #step()}.
     *
     * @param localItems the items of this rank's micro-batches of the step
     * @param microBatches the step's micro-batches, from 1 to the gradient accumulation steps; the
     *     same on every rank
     * @return the items of the step over all ranks
     * @throws IllegalArgumentException if {@code microBatches} is out of that range
     * @throws IllegalStateException if micro-batches of the step were already trained
     */
    public long countStepItems(long localItems, int microBatches) {
        return sharded().countStepItems(localItems, microBatches);
    }

    /**
     * Counts a micro-batch; on every {@code gradientAccumulationSteps}-th call, clips the gradients
     * (if configured) and updates this rank's shards with the user's optimizer.
     */
    @Override
    public void step() {
        long begin = System.nanoTime();
        if (sharded().step()) {
            addMetric("step", begin);
        }
    }

    /**
     * Returns the global gradient norm before clipping at the last optimizer step, measured at
     * every step whether or not clipping is configured (one all-reduce of a float); empty before
     * the first step or when nothing trains.
     */
    public OptionalDouble getLastGradNorm() {
        return sharded().getLastGradNorm();
    }

    /**
     * Returns the loss scale of a float16 run (the factor the loss is multiplied by before
     * backward; see {@link ai.djl.fsdp.optim.LossScaler}), empty in other precisions.
     */
    public OptionalDouble getLossScale() {
        return sharded().getLossScale();
    }

    /** Returns the bytes this rank holds and sent. */
    public ShardingStats getShardingStats() {
        return sharded().getStats();
    }

    /** Returns where this rank's model memory is: device or host, and the peaks. */
    public MemoryStats getMemoryStats() {
        return sharded().getMemoryStats();
    }

    /**
     * Returns where training stands: the optimizer steps taken, the epoch, the caller's own state
     * (saved with every checkpoint and restored by {@link #loadCheckpoint}).
     */
    public TrainingState getTrainingState() {
        return sharded().getState();
    }

    /**
     * Saves a sharded checkpoint of the whole training state into {@code directory} (a collective):
     * every rank writes its shards of the parameters and of the optimizer state, rank 0 the
     * metadata and {@link #getTrainingState()}; the directory appears, complete, on return. Call it
     * between optimizer steps.
     *
     * @param directory the checkpoint directory, on storage every rank shares
     * @throws IOException if writing fails
     */
    public void saveCheckpoint(Path directory) throws IOException {
        sharded().saveCheckpoint(directory, false, 0);
    }

    /**
     * Saves a checkpoint as {@link #saveCheckpoint(Path)} does, but returns once this rank's shards
     * are copied to host memory: the files are written in the background while training goes on,
     * and the next save, load or close waits for them.
     *
     * @param directory the checkpoint directory, on storage every rank shares
     * @throws IOException if copying fails, or the previous background save failed
     */
    public void saveCheckpointAsync(Path directory) throws IOException {
        sharded().saveCheckpoint(directory, true, 0);
    }

    /** Waits for a checkpoint being written in the background; rethrows its failure. */
    public void awaitCheckpoint() throws IOException {
        sharded().awaitCheckpoint();
    }

    /**
     * Loads a sharded checkpoint (written by any number of ranks) into this rank's shards, the
     * optimizer's state and the training state; every rank calls it, before training on.
     *
     * @param directory a complete checkpoint directory
     * @throws IOException if the checkpoint is incomplete or does not fit the model; nothing is
     *     changed then
     */
    public void loadCheckpoint(Path directory) throws IOException {
        sharded().loadCheckpoint(directory);
    }

    /**
     * Runs {@code action} with every parameter of the model holding its full array, as in an
     * unsharded model (to save a checkpoint, say), and frees those arrays afterwards. Every rank
     * must call it: the arrays are gathered.
     *
     * @param action what to run
     */
    public void withFullParameters(Runnable action) {
        if (sharded == null) {
            action.run();
            return;
        }
        sharded.getModel().gatherParameterArrays();
        try {
            action.run();
        } finally {
            sharded.getModel().releaseParameterArrays();
        }
    }

    /**
     * Runs {@code visitor} on each FSDP unit in turn, the root last, while that unit alone holds
     * its full parameters (see {@link ShardedModel#forEachUnitGathered}): what {@link
     * #withFullParameters} does for the whole model, one unit at a time, so no rank ever holds the
     * whole model. Every rank must call it.
     *
     * @param visitor what to run on each unit
     * @throws IOException if the visitor throws it
     */
    public void forEachUnitGathered(UnitVisitor visitor) throws IOException {
        sharded().getModel().forEachUnitGathered(visitor);
    }

    /**
     * Writes the model's full state as one safetensors file, one unit at a time, so no rank holds
     * the whole model (see {@link ModelStateWriter}). A collective: every rank calls it; rank 0
     * writes.
     *
     * @param file the safetensors file to create or replace (on rank 0)
     * @param transform what the state holds: {@link StateTransform#parameters(ai.djl.nn.Block)} for
     *     the model as it is, or a LoRA transform
     * @throws IOException if writing fails on rank 0: on every rank, rank 0's message carried
     */
    public void saveFullState(Path file, StateTransform transform) throws IOException {
        ModelStateWriter.write(this::forEachUnitGathered, group(), file, transform);
    }

    /**
     * Writes the model's full state as a Hugging Face checkpoint directory, one unit at a time:
     * {@code model.safetensors}, or numbered shards of at most {@code maxShardBytes} and their
     * index (see {@link ModelStateWriter#writeCheckpoint}). A collective: every rank calls it; rank
     * 0 writes.
     *
     * @param directory the existing directory on rank 0
     * @param transform what the state holds
     * @param maxShardBytes the most tensor bytes one file holds
     * @throws IOException if writing fails on rank 0: on every rank, rank 0's message carried
     */
    public void saveFullState(Path directory, StateTransform transform, long maxShardBytes)
            throws IOException {
        ModelStateWriter.writeCheckpoint(
                this::forEachUnitGathered, group(), directory, transform, maxShardBytes);
    }

    /** Returns how the model is sharded. */
    public FsdpConfig getFsdpConfig() {
        return setup.fsdp();
    }

    /** Returns how the trainer steps. */
    public TrainerOptions getTrainerOptions() {
        return setup.options();
    }

    /**
     * Gathers the trained parameters back into the model on every rank (a collective: every rank
     * must close its trainer), restores the model's block tree, then closes as DJL's trainer does.
     * Listeners that read the whole model (DJL's {@code SaveModelTrainingListener}) end first, with
     * the full parameters gathered, whether or not the model is gathered for good: with {@link
     * TrainerOptions.Builder#optGatherOnClose} off, the parameters are left empty. Every step runs
     * even when one fails (a final save, say): the first failure is thrown at the end, the later
     * ones suppressed onto it.
     */
    @Override
    public void close() {
        Failures.runAll(
                () -> {
                    if (sharded != null) {
                        Failures.forEach(
                                rankConfig.getShardedModelListeners(),
                                listener -> listener.endTraining(this));
                    }
                },
                this::closeSharded,
                setup.mesh()::close,
                super::close);
    }

    private void closeSharded() {
        if (sharded != null) {
            try {
                sharded.close(); // a checkpoint still being written completes first
            } finally {
                sharded = null;
            }
        }
    }
}
