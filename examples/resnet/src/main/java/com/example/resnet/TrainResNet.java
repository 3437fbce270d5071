package com.example.resnet;

import ai.djl.Model;
import ai.djl.metric.Metrics;
import ai.djl.basicmodelzoo.cv.classification.ResNetV1;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.initializer.XavierInitializer;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import java.nio.file.Path;
import java.util.Random;

/**
 * DJL's ResNet-20 (with BatchNorm) trained on synthetic 3x28x28 images of 10 classes, written as a
 * plain DJL program; the lines marked FSDP are all that make it train sharded over the ranks that
 * {@code bin/fsdp launch}, torchrun or Slurm start. Seeded (the engine, the images, the initial
 * weights), so every run prints the same figures. Arguments: epochs (default 4), and a directory to
 * save the trained model in (default runs/resnet20).
 */
public final class TrainResNet {

    private static final int GLOBAL_BATCH = 32;

    /** One seed for everything random: the images, the initial weights, the engine. */
    private static final int SEED = 1;

    private TrainResNet() {}

    public static void main(String[] args) throws Exception {
        int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        Path output = Path.of(args.length > 1 ? args[1] : "runs/resnet20");
        // Every rank draws the same numbers, and every run the same: the figures repeat exactly.
        Engine.getInstance().setRandomSeed(SEED);
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        // DJL's default for weights, spelled out: He's (Gaussian, fan-in, 2).
                        .optInitializer(
                                new XavierInitializer(
                                        XavierInitializer.RandomType.GAUSSIAN,
                                        XavierInitializer.FactorType.IN,
                                        2),
                                Parameter.Type.WEIGHT)
                        .optOptimizer(
                                Optimizer.adam()
                                        .optLearningRateTracker(Tracker.fixed(0.002f))
                                        .build())
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
            ArrayDataset train = images(manager, 512, SEED);
            ArrayDataset validation = images(manager, 128, SEED + 1);
            // FSDP: shard each residual unit (a ParallelBlock in DJL's ResNetV1).
            FsdpConfig fsdp =
                    FsdpConfig.builder()
                            .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                            .optWrapPolicy(WrapPolicy.byLayerClass("ParallelBlock"))
                            .build();
            // FSDP: instead of model.newTrainer(config).
            try (Trainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                trainer.setMetrics(new Metrics()); // as DJL's examples do, for the logged figures
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
     * Noise images in which the band of rows of the image's class (one of 10 bands of channel 0)
     * is brighter, in global batches of {@link #GLOBAL_BATCH}.
     */
    private static ArrayDataset images(NDManager manager, int size, int seed) {
        Random random = new Random(seed);
        int pixels = 3 * 28 * 28;
        float[] images = new float[size * pixels];
        float[] labels = new float[size];
        for (int n = 0; n < size; n++) {
            int label = random.nextInt(10);
            labels[n] = label;
            for (int i = 0; i < pixels; i++) {
                images[n * pixels + i] = (float) random.nextGaussian();
            }
            int band = n * pixels + (4 + 2 * label) * 28; // rows 4 + 2 * label and the next
            for (int i = band; i < band + 2 * 28; i++) {
                images[i] += 1f;
            }
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(images, new Shape(size, 3, 28, 28)))
                .optLabels(manager.create(labels))
                .setSampling(GLOBAL_BATCH, false)
                .build();
    }
}
