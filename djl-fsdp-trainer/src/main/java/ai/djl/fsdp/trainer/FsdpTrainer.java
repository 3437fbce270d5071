package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.optim.ShardedOptimizer;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.unit.FsdpParameterStore;
import ai.djl.fsdp.unit.ShardedModel;
import ai.djl.fsdp.unit.UnitVisitor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.jni.JniUtils;
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
import java.util.List;
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

    private final MeteredProcessGroup group;
    private final FsdpConfig config;
    private final Optimizer optimizer;
    private final NDManager deviceManager;
    private ShardedModel sharded;
    private FsdpParameterStore parameterStore;
    private ShardedOptimizer shardedOptimizer;
    private int microBatches;
    private long sentBytesLastStep;
    private float lastGradNorm = Float.NaN;

    FsdpTrainer(Model model, TrainingConfig trainingConfig, ProcessGroup group, FsdpConfig config) {
        super(
                model,
                new RankScopedTrainingConfig(
                        trainingConfig,
                        group.rank() == 0 || config.isLogAllRanks(),
                        group.rank() == 0,
                        RankDevice.forTraining(trainingConfig.getDevices(), group.device())));
        // DJL's Model.newInstance puts every rank's model manager on gpu(0): work on the rank's.
        deviceManager = onRankDevice(super.getManager());
        this.group = new MeteredProcessGroup(group);
        this.config = config;
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
        ShardingStrategy strategy = config.getShardingStrategy();
        sharded =
                ShardedModel.shard(
                        getModel().getBlock(),
                        config.getWrapPolicy(),
                        group,
                        strategy.isSharded(),
                        strategy.recomputesInBackward(),
                        config.isPrefetch(),
                        config.isSyncModuleStates(),
                        getManager(),
                        config.getParameterSource());
        parameterStore = new FsdpParameterStore(getManager(), sharded);
        List<FlatParameter> trainable =
                sharded.flatParameters().stream()
                        .filter(FlatParameter::isTrainable)
                        .collect(Collectors.toList());
        shardedOptimizer =
                new ShardedOptimizer(optimizer, trainable, group, config.getMaxGradNorm());
        group.takeSentBytes(); // the setup's broadcasts are not a step's traffic
    }

    private ShardedModel sharded() {
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
        boolean recording = training && JniUtils.isGradMode();
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
        sharded().backward(loss, parameterStore, 1f / config.getGradientAccumulationSteps());
    }

    void zeroGradients() {
        sharded().flatParameters().forEach(FlatParameter::zeroGradient);
    }

    /**
     * Counts a micro-batch; on every {@code gradientAccumulationSteps}-th call, clips the gradients
     * (if configured) and updates this rank's shards with the user's optimizer.
     */
    @Override
    public void step() {
        if (++microBatches < config.getGradientAccumulationSteps()) {
            return;
        }
        microBatches = 0;
        long begin = System.nanoTime();
        lastGradNorm = shardedOptimizer.step();
        sharded().endStep();
        sentBytesLastStep = group.takeSentBytes();
        addMetric("step", begin);
    }

    /**
     * Returns the global gradient norm before clipping at the last optimizer step, NaN without
     * clipping.
     */
    public float getLastGradNorm() {
        return lastGradNorm;
    }

    /** Returns the bytes this rank holds and sent. */
    public ShardingStats getShardingStats() {
        long parameters = 0;
        long gradients = 0;
        long unsharded = 0;
        for (FlatParameter flat : sharded().flatParameters()) {
            parameters += flat.shardBytes();
            gradients += flat.gradientBytes();
            unsharded += flat.getNumel() * flat.getShard().getDataType().getNumOfBytes();
        }
        return new ShardingStats(
                parameters, gradients, shardedOptimizer.stateBytes(), unsharded, sentBytesLastStep);
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

    /** Returns this process's rank in the trainer's process group. */
    public int getRank() {
        return group.rank();
    }

    /** Returns the FSDP configuration. */
    public FsdpConfig getFsdpConfig() {
        return config;
    }

    /**
     * Gathers the trained parameters back into the model on every rank (a collective: every rank
     * must close its trainer), restores the model's block tree, then closes as DJL's trainer does
     * (listeners see the full model at training end). With {@link
     * FsdpConfig.Builder#optGatherOnClose} off, nothing is gathered and the parameters are left
     * empty.
     */
    @Override
    public void close() {
        if (sharded != null) {
            if (config.isGatherOnClose()) {
                sharded.unshard();
            } else {
                sharded.restoreBlockTree();
            }
            sharded.close();
            sharded = null;
        }
        super.close();
    }
}
