package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ModelStateWriter;
import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.checkpoint.UnitVisitor;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.optim.ShardedOptimizer;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.runtime.FsdpParameterStore;
import ai.djl.fsdp.runtime.ShardedModel;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.tensor.Autograd;
import ai.djl.fsdp.tensor.OptimizerStates;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingConfig;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Dataset;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.translate.TranslateException;
import ai.djl.util.Pair;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalDouble;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Collectors;

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
 */
public class FsdpTrainer extends Trainer {

    /** How long rank 0 waits for the other ranks' checkpoint files. */
    private static final Duration CHECKPOINT_TIMEOUT = Duration.ofMinutes(30);

    private final MeteredProcessGroup group;
    private final FsdpConfig config;
    private final TrainerOptions options;
    private final RankScopedTrainingConfig rankConfig;
    private final Optimizer optimizer;
    private final NDManager deviceManager;
    private ShardedModel sharded;
    private FsdpParameterStore parameterStore;
    private ShardedOptimizer shardedOptimizer;
    private int microBatches;
    private long sentBytesLastStep;
    private OptionalDouble lastGradNorm = OptionalDouble.empty();
    private final TrainingState trainingState = new TrainingState();
    private Checkpointing checkpointing;

    FsdpTrainer(
            Model model,
            TrainingConfig trainingConfig,
            ProcessGroup group,
            FsdpConfig config,
            TrainerOptions options) {
        this(
                model,
                new RankScopedTrainingConfig(
                        trainingConfig,
                        group.rank() == 0 || options.isLogAllRanks(),
                        group.rank() == 0,
                        RankDevice.forTraining(trainingConfig.getDevices(), group.device())),
                group,
                config,
                options);
    }

    private FsdpTrainer(
            Model model,
            RankScopedTrainingConfig trainingConfig,
            ProcessGroup group,
            FsdpConfig config,
            TrainerOptions options) {
        super(model, trainingConfig);
        this.rankConfig = trainingConfig;
        // DJL's Model.newInstance puts every rank's model manager on gpu(0): work on the rank's.
        deviceManager = onRankDevice(super.getManager());
        this.group = new MeteredProcessGroup(group);
        this.config = config;
        this.options = options;
        this.optimizer = trainingConfig.getOptimizer();
        // What Model.newTrainer does before constructing DJL's trainer.
        for (Pair<Initializer, Predicate<Parameter>> pair : trainingConfig.getInitializers()) {
            if (pair.getKey() != null && pair.getValue() != null) {
                model.getBlock().setInitializer(pair.getKey(), pair.getValue());
            }
        }
        if (model.getBlock().isInitialized()) {
            shard();
        }
    }

    /** Initializes the model's parameters for inputs of these shapes, then shards them. */
    @Override
    public void initialize(Shape... shapes) {
        if (sharded != null) {
            throw new IllegalStateException("The model is already initialized and sharded");
        }
        Block block = getModel().getBlock();
        block.initialize(onRankDevice(getModel().getNDManager()), getModel().getDataType(), shapes);
        shard();
    }

    private void shard() {
        sharded = ModelSharding.shard(getModel().getBlock(), config, options, group, getManager());
        parameterStore = new FsdpParameterStore(getManager(), sharded);
        List<FlatParameter> trainable =
                sharded.getFlatParameters().stream()
                        .filter(FlatParameter::isTrainable)
                        .collect(Collectors.toList());
        shardedOptimizer =
                new ShardedOptimizer(optimizer, trainable, group, options.getMaxGradNorm());
        checkpointing =
                new Checkpointing(
                        group,
                        sharded.getFlatParameters(),
                        StateDict.parameters(getModel().getBlock()),
                        optimizer,
                        CHECKPOINT_TIMEOUT);
        group.takeSentBytes(); // the setup's broadcasts are not a step's traffic
    }

    ShardedModel sharded() {
        if (sharded == null) {
            throw new IllegalStateException(
                    "The model's parameters are not initialized: call trainer.initialize("
                            + "inputShapes) before training");
        }
        return sharded;
    }

    /** Returns the trainer's manager, on this rank's device. */
    @Override
    public NDManager getManager() {
        return deviceManager != null ? deviceManager : super.getManager();
    }

    private NDManager onRankDevice(NDManager manager) {
        Device device = getDevices()[0];
        return device.equals(manager.getDevice()) ? manager : manager.newSubManager(device);
    }

    @Override
    public Iterable<Batch> iterateDataset(Dataset dataset) throws IOException, TranslateException {
        Iterable<Batch> batches = super.iterateDataset(dataset);
        return group.size() == 1 ? batches : new RankBatches(batches, group.rank(), group.size());
    }

    @Override
    public GradientCollector newGradientCollector() {
        return new FsdpGradientCollector(super.newGradientCollector(), this);
    }

    @Override
    public NDList forward(NDList input) {
        return run(input, true, () -> getModel().getBlock().forward(parameterStore, input, true));
    }

    @Override
    public NDList forward(NDList data, NDList labels) {
        return run(
                data,
                true,
                () -> getModel().getBlock().forward(parameterStore, data, labels, null));
    }

    @Override
    public NDList evaluate(NDList input) {
        return run(input, false, () -> getModel().getBlock().forward(parameterStore, input, false));
    }

    private NDList run(NDList data, boolean training, Supplier<NDList> pass) {
        ShardedModel model = sharded();
        long begin = System.nanoTime();
        // Only a forward under an open gradient collector is followed by backward.
        boolean recording = training && Autograd.isGradMode();
        model.beginForward(recording, data.head().getManager());
        try {
            NDList outputs = pass.get();
            // Outputs outlive the pass (listeners read them): keep them with the batch's arrays.
            outputs.attach(data.head().getManager());
            return outputs;
        } finally {
            if (!recording) {
                model.endInference();
            }
            if (training) {
                addMetric("forward", begin);
            }
        }
    }

    void backward(NDArray loss) {
        sharded().backward(loss, parameterStore, 1f / options.getGradientAccumulationSteps());
    }

    void zeroGradients() {
        sharded().getFlatParameters().forEach(FlatParameter::zeroGradient);
    }

    /**
     * Counts a micro-batch; on every {@code gradientAccumulationSteps}-th call, clips the gradients
     * (if configured) and updates this rank's shards with the user's optimizer.
     */
    @Override
    public void step() {
        if (++microBatches < options.getGradientAccumulationSteps()) {
            return;
        }
        microBatches = 0;
        long begin = System.nanoTime();
        lastGradNorm = shardedOptimizer.step();
        sharded().endStep();
        trainingState.setStep(trainingState.getStep() + 1);
        sentBytesLastStep = group.takeSentBytes();
        addMetric("step", begin);
    }

    /**
     * Returns the global gradient norm before clipping at the last optimizer step; empty before the
     * first step, without clipping (where it is not measured) or when nothing trains.
     */
    public OptionalDouble getLastGradNorm() {
        return lastGradNorm;
    }

    /** Returns the bytes this rank holds and sent. */
    public ShardingStats getShardingStats() {
        return ShardingStats.of(
                sharded().getFlatParameters(), shardedOptimizer.getStateBytes(), sentBytesLastStep);
    }

    /**
     * Returns where training stands: the optimizer steps taken, the epoch, the caller's own state
     * (saved with every checkpoint and restored by {@link #loadCheckpoint}).
     */
    public TrainingState getTrainingState() {
        trainingState.setUpdateCounts(OptimizerStates.updateCounts(optimizer));
        return trainingState;
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
        saveCheckpoint(directory, false, 0);
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
        saveCheckpoint(directory, true, 0);
    }

    /** Returns whether the last micro-batch completed an optimizer step. */
    boolean isAtStepBoundary() {
        return microBatches == 0;
    }

    void saveCheckpoint(Path directory, boolean async, int keepNewest) throws IOException {
        if (microBatches != 0) {
            throw new IllegalStateException(
                    "A checkpoint is saved between optimizer steps; "
                            + microBatches
                            + " micro-batches of the current step are accumulated");
        }
        sharded();
        checkpointing.save(directory, getTrainingState(), async, keepNewest);
    }

    /** Waits for a checkpoint being written in the background; rethrows its failure. */
    public void awaitCheckpoint() throws IOException {
        if (checkpointing != null) {
            checkpointing.await();
        }
    }

    /**
     * Loads a sharded checkpoint (written by any number of ranks) into this rank's shards, the
     * optimizer's state and the training state; every rank calls it, before training on.
     *
     * @param directory a complete checkpoint directory
     * @throws IOException if the checkpoint is incomplete or does not fit the model; nothing is
     *     trained
     */
    public void loadCheckpoint(Path directory) throws IOException {
        sharded();
        TrainingState loaded = checkpointing.load(directory);
        trainingState.setStep(loaded.getStep());
        trainingState.setEpoch(loaded.getEpoch());
        trainingState.getExtras().clear();
        trainingState.getExtras().putAll(loaded.getExtras());
        microBatches = 0;
        sharded.setStep(loaded.getStep());
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
        sharded.gatherParameterArrays();
        try {
            action.run();
        } finally {
            sharded.releaseParameterArrays();
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
        sharded().forEachUnitGathered(visitor);
    }

    /**
     * Writes the model's full state as one safetensors file, one unit at a time, so no rank holds
     * the whole model (see {@link ModelStateWriter}). A collective: every rank calls it; rank 0
     * writes.
     *
     * @param file the safetensors file to create or replace (on rank 0)
     * @param transform what the state holds: {@link StateTransform#parameters(ai.djl.nn.Block)} for
     *     the model as it is, or a LoRA transform
     * @throws IOException if writing fails
     */
    public void saveFullState(Path file, StateTransform transform) throws IOException {
        ModelStateWriter.write(this::forEachUnitGathered, getRank() == 0, file, transform);
    }

    /** Returns this process's rank in the trainer's process group. */
    public int getRank() {
        return group.rank();
    }

    /** Returns how the model is sharded. */
    public FsdpConfig getFsdpConfig() {
        return config;
    }

    /** Returns how the trainer steps. */
    public TrainerOptions getTrainerOptions() {
        return options;
    }

    /**
     * Gathers the trained parameters back into the model on every rank (a collective: every rank
     * must close its trainer), restores the model's block tree, then closes as DJL's trainer does.
     * Listeners that read the whole model (DJL's {@code SaveModelTrainingListener}) end first, with
     * the full parameters gathered, whether or not the model is gathered for good: with {@link
     * TrainerOptions.Builder#optGatherOnClose} off, the parameters are left empty.
     */
    @Override
    public void close() {
        if (sharded != null) {
            rankConfig.getShardedModelListeners().forEach(listener -> listener.endTraining(this));
            try {
                checkpointing.close(); // a checkpoint still being written completes first
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                if (options.isGatherOnClose()) {
                    sharded.unshard();
                } else {
                    sharded.restoreBlockTree();
                }
                sharded.close();
                sharded = null;
            }
        }
        super.close();
    }
}
