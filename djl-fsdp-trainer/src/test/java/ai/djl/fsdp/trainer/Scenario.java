package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.internal.runtime.FsdpUnit;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Random;
import java.util.StringJoiner;

/**
 * One training run of {@link TinyLm}, either with DJL's ordinary trainer on the global batches or
 * with FSDP on one rank's share of them; the two must agree.
 *
 * @param strategy the sharding strategy (FSDP runs)
 * @param worldSize the number of ranks the global batch is split over
 * @param accumulation micro-batches per optimizer step
 * @param maxGradNorm the clipping norm, 0 for none
 * @param freeze whether the second unit's layer norm is frozen (a unit mixing both kinds)
 * @param adam whether to use AdamW (else SGD with momentum)
 * @param steps optimizer steps
 * @param dropout the units' dropout rate, 0 for none
 * @param checkpointing which units are recomputed in backward, as {@link
 *     ActivationCheckpointing#parse} reads it
 */
record Scenario(
        ShardingStrategy strategy,
        int worldSize,
        int accumulation,
        float maxGradNorm,
        boolean freeze,
        boolean adam,
        int steps,
        float dropout,
        String checkpointing) {

    /**
     * A scenario that recomputes every unit where parameters are freed after forward and none where
     * they are kept (the pairs the strategies stood for before checkpointing was a setting).
     */
    Scenario(
            ShardingStrategy strategy,
            int worldSize,
            int accumulation,
            float maxGradNorm,
            boolean freeze,
            boolean adam,
            int steps,
            float dropout) {
        this(
                strategy,
                worldSize,
                accumulation,
                maxGradNorm,
                freeze,
                adam,
                steps,
                dropout,
                strategy.isReshardAfterForward() ? "full" : "none");
    }

    static final int LOCAL_BATCH = 2;

    /** The shard group of the hybrid strategies: 4 ranks are 2 "nodes" of 2. */
    static final int HYBRID_SHARD_GROUP = 2;

    static final int SEQUENCE = 3;

    /**
     * What a run produced: each optimizer step's loss, the final parameters by name, and for FSDP
     * runs the sharding figures, how many arrays the model's managers held after each step, and
     * each step's units (root excluded) after its first forward, as {@code STATE:residentBytes}
     * joined by {@code ;}.
     */
    record Result(
            double[] losses,
            Map<String, float[]> parameters,
            ShardingStats stats,
            int[] liveArrays,
            String[] unitsAfterForward) {}

    String describe() {
        return strategy
                + " nproc="
                + worldSize
                + " accumulation="
                + accumulation
                + " maxGradNorm="
                + maxGradNorm
                + " freeze="
                + freeze
                + " adam="
                + adam
                + " dropout="
                + dropout
                + " checkpointing="
                + checkpointing;
    }

    /**
     * Runs FSDP as {@code group}'s rank, on its device; the losses are this rank's micro-batch
     * means.
     */
    Result runFsdp(ProcessGroup group) {
        try (Model model = newModel(group.getDevice())) {
            double[] losses = new double[steps];
            ShardingStats stats = null;
            int[] liveArrays = new int[steps];
            String[] unitsAfterForward = new String[steps];
            try (FsdpTrainer trainer = newFsdpTrainer(model, group)) {
                initialize(trainer);
                for (int step = 0; step < steps; step++) {
                    for (int micro = 0; micro < accumulation; micro++) {
                        int firstRow = (micro * worldSize + group.getRank()) * LOCAL_BATCH;
                        String[] units = micro == 0 ? unitsAfterForward : null;
                        losses[step] +=
                                forwardBackward(trainer, step, firstRow, LOCAL_BATCH, 1f, units)
                                        / accumulation;
                        trainer.step();
                    }
                    stats = trainer.getShardingStats();
                    liveArrays[step] = model.getNDManager().getManagedArrays().size();
                }
            }
            // Closing the trainer gathered the trained parameters back into the model.
            return new Result(losses, parametersOf(model), stats, liveArrays, unitsAfterForward);
        }
    }

    /** Runs DJL's ordinary trainer on the whole global batch of each step. */
    Result runReference() {
        return runReference(1);
    }

    /**
     * The float32 noise of the reference itself: DJL's trainer once on whole global batches, once
     * on each global batch as two accumulated halves, which sums the same terms in another order.
     *
     * @param reference the reference run ({@link #runReference()})
     * @return the bound an FSDP run of this scenario is held to
     */
    Equivalence.Bound noiseBound(Result reference) {
        Result halves = runReference(2);
        return Equivalence.Bound.of(
                reference.losses(), halves.losses(), reference.parameters(), halves.parameters());
    }

    /**
     * Runs DJL's ordinary trainer on each step's global batch, as {@code parts} micro-batches whose
     * gradients accumulate (each loss scaled by {@code 1 / parts}) before one update.
     */
    private Result runReference(int parts) {
        try (Model model = newModel(Device.cpu());
                Trainer trainer = model.newTrainer(trainingConfig(Device.cpu()))) {
            initialize(trainer);
            double[] losses = new double[steps];
            int rows = worldSize * accumulation * LOCAL_BATCH / parts;
            for (int step = 0; step < steps; step++) {
                for (int part = 0; part < parts; part++) {
                    losses[step] +=
                            forwardBackward(trainer, step, part * rows, rows, 1f / parts, null);
                }
                stepReference(trainer, model);
            }
            return new Result(losses, parametersOf(model), null, null, null);
        }
    }

    private Model newModel(Device device) {
        Model model = Model.newInstance("tiny-lm", device);
        model.setBlock(new TinyLm(dropout));
        return model;
    }

    private DefaultTrainingConfig trainingConfig(Device device) {
        Optimizer optimizer =
                adam
                        ? Optimizer.adamW().optLearningRateTracker(Tracker.fixed(0.05f)).build()
                        : Optimizer.sgd()
                                .setLearningRateTracker(Tracker.fixed(0.2f))
                                .optMomentum(0.9f)
                                .build();
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optInitializer(new NormalInitializer(0.5f), Parameter.Type.WEIGHT)
                .optOptimizer(optimizer)
                .optDevices(new Device[] {device});
    }

    /** Runs FSDP as {@code group}'s rank and returns the gradient norm of the last step. */
    OptionalDouble lastGradNorm(ProcessGroup group) {
        try (Model model = newModel(group.getDevice());
                FsdpTrainer trainer = newFsdpTrainer(model, group)) {
            initialize(trainer);
            for (int step = 0; step < steps; step++) {
                for (int micro = 0; micro < accumulation; micro++) {
                    int firstRow = (micro * worldSize + group.getRank()) * LOCAL_BATCH;
                    forwardBackward(trainer, step, firstRow, LOCAL_BATCH, 1f, null);
                    trainer.step();
                }
            }
            return trainer.getLastGradNorm();
        }
    }

    private FsdpTrainer newFsdpTrainer(Model model, ProcessGroup group) {
        FsdpConfig.Builder builder =
                FsdpConfig.builder()
                        .optShardingStrategy(strategy)
                        .optWrapPolicy(WrapPolicy.byLayerClass("MixerBlock"))
                        .optActivationCheckpointing(ActivationCheckpointing.parse(checkpointing));
        // Where each node runs HYBRID_SHARD_GROUP ranks (HybridTwoNodeTest), the default shard
        // group, LOCAL_WORLD_SIZE, is the node; on one machine the test sets it.
        boolean nodeIsShardGroup =
                Integer.toString(HYBRID_SHARD_GROUP).equals(System.getenv("LOCAL_WORLD_SIZE"));
        if (strategy.isHybrid() && !nodeIsShardGroup) {
            builder.optShardGroupSize(Math.min(HYBRID_SHARD_GROUP, worldSize));
        }
        FsdpConfig config = builder.build();
        TrainerOptions.Builder options =
                TrainerOptions.builder().optGradientAccumulationSteps(accumulation);
        if (maxGradNorm > 0) {
            options.optMaxGradNorm(maxGradNorm);
        }
        return FullyShardedDataParallel.newTrainer(
                model, trainingConfig(group.getDevice()), group, config, options.build());
    }

    private void initialize(Trainer trainer) {
        Engine.getInstance().setRandomSeed(1234);
        if (freeze) {
            ((TinyLm) trainer.getModel().getBlock()).freezeMiddleNorm();
        }
        trainer.initialize(new Shape(LOCAL_BATCH, SEQUENCE));
    }

    /**
     * Runs forward and backward on rows {@code [firstRow, firstRow + rows)} of step {@code step}'s
     * global batch, with the loss scaled by {@code weight} before backward, and returns the loss
     * times {@code weight}. With {@code unitsAfterForward}, the FSDP units' states after the
     * forward go to its entry {@code step}.
     */
    private double forwardBackward(
            Trainer trainer,
            int step,
            int firstRow,
            int rows,
            float weight,
            String[] unitsAfterForward) {
        NDManager manager = trainer.getManager();
        try (NDManager scope = manager.newSubManager()) {
            int[][] tokens = globalTokens(step);
            int[] data = new int[rows * SEQUENCE];
            int[] labels = new int[rows * SEQUENCE];
            for (int r = 0; r < rows; r++) {
                for (int t = 0; t < SEQUENCE; t++) {
                    data[r * SEQUENCE + t] = tokens[firstRow + r][t];
                    labels[r * SEQUENCE + t] = tokens[firstRow + r][t + 1];
                }
            }
            NDList x = new NDList(scope.create(data, new Shape(rows, SEQUENCE)));
            NDList y = new NDList(scope.create(labels, new Shape(rows, SEQUENCE, 1)));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList predictions = trainer.forward(x, y);
                if (unitsAfterForward != null) {
                    unitsAfterForward[step] = describeUnits((FsdpTrainer) trainer);
                }
                NDArray value = trainer.getLoss().evaluate(y, predictions);
                if (weight != 1f) {
                    value = value.mul(weight);
                }
                collector.backward(value);
                return value.getFloat();
            }
        }
    }

    /**
     * The reference's step after its micro-batches: clipping by hand, the optimizer, and zeroing
     * the gradients DJL's collector leaves in place.
     */
    private void stepReference(Trainer trainer, Model model) {
        if (maxGradNorm > 0) {
            clipByHand(model);
        }
        trainer.step();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            if (pair.getValue().requiresGradient()) {
                Autograd.zeroGradient(pair.getValue().getArray());
            }
        }
    }

    private static String describeUnits(FsdpTrainer trainer) {
        StringJoiner units = new StringJoiner(";");
        for (FsdpUnit unit : trainer.sharded().getModel().getUnits().subList(1, 4)) {
            units.add(unit.getState() + ":" + unit.getGatheredResidentBytes());
        }
        return units.toString();
    }

    private void clipByHand(Model model) {
        double sumOfSquares = 0;
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            if (pair.getValue().requiresGradient()) {
                NDArray gradient = pair.getValue().getArray().getGradient();
                sumOfSquares += gradient.square().sum().getFloat();
            }
        }
        float norm = (float) Math.sqrt(sumOfSquares);
        float coefficient = maxGradNorm / (norm + 1e-6f);
        if (coefficient < 1) {
            for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
                if (pair.getValue().requiresGradient()) {
                    pair.getValue().getArray().getGradient().muli(coefficient);
                }
            }
        }
    }

    /** Token rows of step {@code step}'s global batch; each row holds inputs and next tokens. */
    private int[][] globalTokens(int step) {
        Random random = new Random(1000L + step);
        int rows = worldSize * accumulation * LOCAL_BATCH;
        int[][] tokens = new int[rows][SEQUENCE + 1];
        for (int[] row : tokens) {
            for (int t = 0; t < row.length; t++) {
                row[t] = random.nextInt(TinyLm.VOCAB);
            }
        }
        return tokens;
    }

    private static Map<String, float[]> parametersOf(Model model) {
        Map<String, float[]> parameters = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            parameters.put(pair.getKey(), pair.getValue().getArray().toFloatArray());
        }
        return parameters;
    }
}
