package com.example.resnet;

import ai.djl.Model;
import ai.djl.basicmodelzoo.cv.classification.ResNetV1;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.wrap.WrapPolicy;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.nio.file.Path;

/**
 * DJL's ResNet-20 (with BatchNorm) trained on synthetic 3x28x28 images of 10 classes, written as a
 * plain DJL program; the lines marked FSDP are all that make it train sharded over the ranks that
 * {@code bin/fsdp launch}, torchrun or Slurm start. Arguments: epochs (default 2), and a directory
 * to save the trained model in (default runs/resnet20).
 */
public final class TrainResNet {

    private static final int GLOBAL_BATCH = 32;

    private TrainResNet() {}

    public static void main(String[] args) throws Exception {
        int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        Path output = Path.of(args.length > 1 ? args[1] : "runs/resnet20");
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(
                                Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.05f)).build())
                        .addEvaluator(new Accuracy())
                        .addTrainingListeners(TrainingListener.Defaults.logging());
        try (Model model = Model.newInstance("resnet20");
                NDManager manager = NDManager.newBaseManager();
                // FSDP: join the job the launcher started.
                ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            model.setBlock(
                    ResNetV1.builder()
                            .setImageShape(new Shape(3, 28, 28))
                            .setNumLayers(20)
                            .setOutSize(10)
                            .build());
            ArrayDataset train = images(manager, 512, 1);
            ArrayDataset validation = images(manager, 128, 2);
            // FSDP: shard each residual unit (a ParallelBlock in DJL's ResNetV1).
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            .optWrapPolicy(WrapPolicy.byLayerClass("ParallelBlock"))
                            .build();
            // FSDP: instead of model.newTrainer(config).
            try (Trainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                trainer.initialize(new Shape(GLOBAL_BATCH, 3, 28, 28));
                EasyTrain.fit(trainer, epochs, train, validation);
                // Figures over the global batch, the same on every rank.
                TrainingResult result = trainer.getTrainingResult();
                if (group.getRank() == 0) {
                    System.out.printf(
                            "global validation: loss %.4f, accuracy %.4f (%d epochs, %d ranks)%n",
                            result.getValidateLoss(),
                            result.getValidateEvaluation("Accuracy"),
                            epochs,
                            group.getSize());
                }
            }
            // The trainer gathered the parameters and BatchNorm's statistics back: save as usual.
            if (group.getRank() == 0) {
                model.save(output, "resnet20");
                System.out.println("saved the model in " + output.toAbsolutePath());
            }
        }
    }

    /**
     * Random images whose class is the brightest of 10 fixed regions (a pattern a ResNet learns in
     * a few epochs), in global batches of {@link #GLOBAL_BATCH}.
     */
    private static ArrayDataset images(NDManager manager, int size, int seed) {
        manager.getEngine().setRandomSeed(seed);
        NDArray images = manager.randomNormal(new Shape(size, 3, 28, 28));
        NDArray regions = images.get(":, 0, :20, :").reshape(size, 10, 56).mean(new int[] {2});
        NDArray labels = regions.argMax(1).toType(ai.djl.ndarray.types.DataType.FLOAT32, false);
        return new ArrayDataset.Builder()
                .setData(images)
                .optLabels(labels)
                .setSampling(GLOBAL_BATCH, false)
                .build();
    }
}
