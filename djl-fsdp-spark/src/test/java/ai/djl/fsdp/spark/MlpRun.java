package ai.djl.fsdp.spark;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroupOptions;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A small FULL_SHARD training for the Spark tests: an MLP of two wrapped layers and a head, AdamW,
 * a global batch of {@link #GLOBAL_ROWS} rows per step (each rank its equal slice), the same seeded
 * data and initial weights on every launcher. Run as a main class (by {@code bin/fsdp launch} or a
 * rank JVM of {@link FsdpDistributor#runMain}) it reads its job from the environment and writes its
 * losses to {@code OUT_DIR/rankN}; {@link #train} is the same in the caller's JVM.
 */
public final class MlpRun {

    static final int GLOBAL_ROWS = 8;
    static final int FEATURES = 16;
    static final int CLASSES = 4;

    private MlpRun() {}

    /**
     * Trains as the rank the environment names.
     *
     * @param args the output folder, the number of steps
     * @throws Exception if training fails
     */
    public static void main(String[] args) throws Exception {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        List<Float> losses = train(env, ProcessGroupOptions.defaults(), Integer.parseInt(args[1]));
        List<String> lines = losses.stream().map(String::valueOf).toList();
        Files.write(Path.of(args[0], "rank" + env.getRank()), lines);
    }

    /**
     * Trains {@code steps} steps as {@code env}'s rank.
     *
     * @return this rank's loss of every step
     */
    static List<Float> train(DistributedEnv env, ProcessGroupOptions options, int steps) {
        return train(env, options, steps, step -> {});
    }

    /**
     * Trains {@code steps} steps as {@code env}'s rank, calling {@code afterStep} after each.
     *
     * @return this rank's loss of every step
     */
    static List<Float> train(
            DistributedEnv env, ProcessGroupOptions options, int steps, StepHook afterStep) {
        List<Float> losses = new ArrayList<>();
        try (ProcessGroup group = ProcessGroups.init(env, options);
                Model model = Model.newInstance("mlp", group.getDevice())) {
            model.setBlock(mlp());
            DefaultTrainingConfig config =
                    new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                            .optOptimizer(
                                    Optimizer.adamW()
                                            .optLearningRateTracker(Tracker.fixed(0.01f))
                                            .build());
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            .optWrapPolicy(WrapPolicy.byLayerClass("SequentialBlock"))
                            .build();
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                Engine.getInstance().setRandomSeed(1234);
                int rows = GLOBAL_ROWS / group.getSize();
                trainer.initialize(new Shape(rows, FEATURES));
                for (int step = 0; step < steps; step++) {
                    losses.add(step(trainer, step, group.getRank() * rows, rows));
                    trainer.step();
                    afterStep.after(step);
                }
            }
        }
        return losses;
    }

    /** Returns the model: two wrapped ReLU layers of 32 units, then the head. */
    private static SequentialBlock mlp() {
        SequentialBlock net = new SequentialBlock();
        for (int i = 0; i < 2; i++) {
            net.add(
                    new SequentialBlock()
                            .add(Linear.builder().setUnits(32).build())
                            .add(Activation::relu));
        }
        return net.add(Linear.builder().setUnits(CLASSES).build());
    }

    /** One step on rows {@code [first, first + rows)} of the step's global batch; its loss. */
    private static float step(FsdpTrainer trainer, int step, int first, int rows) {
        Random random = new Random(1000L + step);
        float[] x = new float[GLOBAL_ROWS * FEATURES];
        float[] y = new float[GLOBAL_ROWS];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        for (int i = 0; i < y.length; i++) {
            y[i] = random.nextInt(CLASSES);
        }
        try (NDManager scope = trainer.getManager().newSubManager()) {
            NDArray all = scope.create(x, new Shape(GLOBAL_ROWS, FEATURES));
            NDArray labels = scope.create(y, new Shape(GLOBAL_ROWS));
            String slice = first + ":" + (first + rows);
            NDList data = new NDList(all.get(slice));
            NDList label = new NDList(labels.get(slice));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray loss = trainer.getLoss().evaluate(label, trainer.forward(data, label));
                float value = loss.getFloat();
                collector.backward(loss);
                return value;
            }
        }
    }

    /** Called after each step (the tests fail or kill a rank there). */
    @FunctionalInterface
    interface StepHook extends java.io.Serializable {
        void after(int step) throws RuntimeException;
    }
}
