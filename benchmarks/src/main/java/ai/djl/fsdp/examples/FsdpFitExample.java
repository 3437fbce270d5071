package ai.djl.fsdp.examples;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.translate.TranslateException;
import java.io.IOException;

/**
 * An ordinary DJL training program (a classifier trained with {@code EasyTrain.fit}) switched to
 * FSDP: the three marked lines are all that changed. Run it on two ranks with {@code bin/fsdp
 * launch --nproc-per-node 2 -- ai.djl.fsdp.examples.FsdpFitExample}.
 */
public final class FsdpFitExample {

    /** The seed of the training points. */
    static final int TRAIN_SEED = 1;

    /** The seed of the validation points: other points than the training ones, held out. */
    static final int VALIDATE_SEED = 2;

    /** The seed of the 10 class directions, the same for every split: one task. */
    private static final int TASK_SEED = 7;

    private FsdpFitExample() {}

    /**
     * Trains the classifier; the job comes from the environment the launcher sets.
     *
     * @param args unused
     * @throws IOException if the dataset cannot be read
     * @throws TranslateException if a batch cannot be made
     */
    public static void main(String[] args) throws IOException, TranslateException {
        SequentialBlock net = classifier();
        DefaultTrainingConfig config = config();

        try (Model model = Model.newInstance("classifier");
                NDManager manager = NDManager.newBaseManager(Device.cpu());
                // FSDP line 1: join the job the launcher started.
                ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            model.setBlock(net);
            ArrayDataset train = dataset(manager, 4096, TRAIN_SEED);
            ArrayDataset validate = dataset(manager, 512, VALIDATE_SEED);
            // FSDP line 2: what to shard, and how.
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            .optWrapPolicy(WrapPolicy.byLayerClass("SequentialBlock"))
                            .build();
            // FSDP line 3: instead of model.newTrainer(config).
            try (Trainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                trainer.initialize(new Shape(64, 32));
                EasyTrain.fit(trainer, 3, train, validate);
                TrainingResult result = trainer.getTrainingResult();
                if (group.getRank() == 0) {
                    System.out.println(
                            "validation accuracy " + result.getValidateEvaluation("Accuracy"));
                }
            }
            // The trainer gathered the trained parameters back: the model saves as usual.
        }
    }

    /** Returns the classifier: four ReLU layers of 128 units, then 10 outputs. */
    static SequentialBlock classifier() {
        SequentialBlock net = new SequentialBlock();
        for (int i = 0; i < 4; i++) {
            net.add(
                    new SequentialBlock()
                            .add(Linear.builder().setUnits(128).build())
                            .add(Activation::relu));
        }
        net.add(Linear.builder().setUnits(10).build());
        return net;
    }

    /** Returns the training configuration: softmax cross-entropy, AdamW, accuracy, logging. */
    static DefaultTrainingConfig config() {
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(Optimizer.adamW().build())
                .addEvaluator(new Accuracy())
                .addTrainingListeners(TrainingListener.Defaults.logging());
    }

    /**
     * Points in 32 dimensions labelled by which of 10 fixed directions they lie closest to, in
     * global batches of 64 (each rank trains on its share of every batch). The directions are the
     * same for every split; the points are drawn from the split's own seed, so that the validation
     * points are not training points.
     *
     * @param manager the manager of the arrays
     * @param size the number of points
     * @param seed the seed of the points: {@link #TRAIN_SEED} or {@link #VALIDATE_SEED}
     */
    static ArrayDataset dataset(NDManager manager, int size, int seed) {
        NDArray directions = directions(manager);
        manager.getEngine().setRandomSeed(seed);
        NDArray points = manager.randomNormal(new Shape(size, 32));
        NDArray labels = points.matMul(directions).argMax(1);
        return new ArrayDataset.Builder()
                .setData(points)
                .optLabels(labels)
                .setSampling(64, false)
                .build();
    }

    /** Returns the 10 class directions, {@code [32, 10]}: the task every split is labelled by. */
    static NDArray directions(NDManager manager) {
        manager.getEngine().setRandomSeed(TASK_SEED);
        return manager.randomNormal(new Shape(32, 10));
    }
}
