package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.training.listener.SaveModelTrainingListener;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import ai.djl.util.Pair;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * {@code EasyTrain.fit} of {@link TinyLm} over a small dataset of global batches, with DJL's
 * default listeners plus one that counts what it sees: once with DJL's ordinary trainer, once with
 * FSDP, where each rank trains on its slice of every global batch.
 */
final class FitScenario {

    static final int EPOCHS = 2;
    static final int GLOBAL_BATCH = 6;
    static final int BATCHES = 3;

    /**
     * How a fit runs.
     *
     * @param epochs how many epochs
     * @param shuffle whether DJL's sampler shuffles the global batches each epoch
     * @param gatherOnClose whether closing the FSDP trainer gathers the model back
     * @param checkpoints where a {@link CheckpointListener} saves every step (keeping 2), or null
     */
    record Variant(int epochs, boolean shuffle, boolean gatherOnClose, Path checkpoints) {

        /** The plain fit: two epochs in a fixed order, the model gathered on close. */
        static final Variant PLAIN = new Variant(EPOCHS, false, true, null);

        /** Three epochs reshuffled each epoch. */
        static final Variant SHUFFLED = new Variant(3, true, true, null);

        /** The model not gathered on close: only the checkpoint listener sees it whole. */
        static final Variant NOT_GATHERED = new Variant(EPOCHS, false, false, null);
    }

    /**
     * What a fit produced; {@code checkpoint} holds the parameters of the last checkpoint DJL's
     * SaveModelTrainingListener wrote (read back on the rank that wrote it, empty elsewhere).
     */
    record Result(
            Map<String, float[]> parameters,
            Map<String, float[]> checkpoint,
            int trainingBatches,
            int validationBatches,
            int epochs,
            TrainingResult trainingResult) {}

    /** Counts the listener calls a fit makes. */
    static final class CountingListener extends TrainingListenerAdapter {
        int trainingBatches;
        int validationBatches;
        int epochs;

        @Override
        public void onTrainingBatch(Trainer trainer, BatchData batchData) {
            trainingBatches++;
        }

        @Override
        public void onValidationBatch(Trainer trainer, BatchData batchData) {
            validationBatches++;
        }

        @Override
        public void onEpoch(Trainer trainer) {
            epochs++;
        }
    }

    private FitScenario() {}

    static Result runReference() throws Exception {
        return fit(null, Variant.PLAIN);
    }

    static Result runFsdp(ProcessGroup group) throws Exception {
        return fit(group, Variant.PLAIN);
    }

    static Result fit(ProcessGroup group, Variant variant)
            throws IOException, TranslateException, MalformedModelException {
        CountingListener counter = new CountingListener();
        Path checkpoints = Files.createTempDirectory("fsdp-fit-checkpoints");
        DefaultTrainingConfig config =
                trainingConfig()
                        .addTrainingListeners(TrainingListener.Defaults.logging())
                        .addTrainingListeners(counter)
                        .addTrainingListeners(
                                new SaveModelTrainingListener(checkpoints.toString()));
        if (group != null && variant.checkpoints() != null) {
            config.addTrainingListeners(
                    CheckpointListener.builder()
                            .setOutputDir(variant.checkpoints())
                            .optSaveSteps(1)
                            .optSaveTotalLimit(2)
                            .optAsync(true)
                            .build());
        }
        try (Model model = Model.newInstance("tiny-lm", Device.cpu());
                NDManager manager = NDManager.newBaseManager()) {
            model.setBlock(new TinyLm(0));
            ArrayDataset data = dataset(manager, 1, variant.shuffle());
            ArrayDataset validation = dataset(manager, 2, false);
            TrainingResult trainingResult;
            try (Trainer trainer =
                    group == null
                            ? model.newTrainer(config)
                            : FullyShardedDataParallel.newTrainer(
                                    model,
                                    config,
                                    group,
                                    FsdpConfig.builder()
                                            .optWrapPolicy(WrapPolicy.byLayerClass("MixerBlock"))
                                            .build(),
                                    TrainerOptions.builder()
                                            .optGatherOnClose(variant.gatherOnClose())
                                            .build())) {
                Engine.getInstance().setRandomSeed(1234);
                trainer.initialize(new Shape(GLOBAL_BATCH, Scenario.SEQUENCE));
                EasyTrain.fit(trainer, variant.epochs(), data, validation);
                trainingResult = trainer.getTrainingResult();
            }
            return new Result(
                    parametersOf(model),
                    readCheckpoint(checkpoints),
                    counter.trainingBatches,
                    counter.validationBatches,
                    counter.epochs,
                    trainingResult);
        } finally {
            try (Stream<Path> files = Files.list(checkpoints)) {
                for (Path file : files.collect(Collectors.toList())) {
                    Files.delete(file);
                }
            }
            Files.delete(checkpoints);
        }
    }

    private static DefaultTrainingConfig trainingConfig() {
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optInitializer(new NormalInitializer(0.5f), Parameter.Type.WEIGHT)
                .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.2f)).build())
                .optDevices(new Device[] {Device.cpu()});
    }

    /**
     * The float32 noise of the reference fit itself: DJL's trainer over the same batches in the
     * same order, each global batch as two accumulated halves (each loss scaled by 1/2), which sums
     * the same terms in another order.
     *
     * @param variant the fit
     * @param reference the parameters DJL's {@code EasyTrain.fit} ended with
     * @return the bound an FSDP fit is held to
     */
    static Equivalence.Bound noiseBound(Variant variant, Map<String, float[]> reference)
            throws IOException, TranslateException {
        try (Model model = Model.newInstance("tiny-lm", Device.cpu());
                NDManager manager = NDManager.newBaseManager()) {
            model.setBlock(new TinyLm(0));
            ArrayDataset data = dataset(manager, 1, variant.shuffle());
            try (Trainer trainer = model.newTrainer(trainingConfig())) {
                Engine.getInstance().setRandomSeed(1234);
                trainer.initialize(new Shape(GLOBAL_BATCH, Scenario.SEQUENCE));
                for (int epoch = 0; epoch < variant.epochs(); epoch++) {
                    for (Batch batch : trainer.iterateDataset(data)) {
                        try (batch) {
                            int half = GLOBAL_BATCH / 2;
                            trainHalf(trainer, batch, "0:" + half);
                            trainHalf(trainer, batch, half + ":");
                        }
                        trainer.step();
                        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
                            Autograd.zeroGradient(pair.getValue().getArray());
                        }
                    }
                }
            }
            return Equivalence.Bound.of(
                    new double[0], new double[0], reference, parametersOf(model));
        }
    }

    /** Forward and backward on the rows {@code rows} of the batch, the loss scaled by 1/2. */
    private static void trainHalf(Trainer trainer, Batch batch, String rows) {
        NDList data = new NDList(batch.getData().head().get(rows));
        NDList labels = new NDList(batch.getLabels().head().get(rows));
        try (GradientCollector collector = trainer.newGradientCollector()) {
            NDList predictions = trainer.forward(data, labels);
            collector.backward(trainer.getLoss().evaluate(labels, predictions).mul(0.5f));
        }
    }

    private static Map<String, float[]> readCheckpoint(Path directory)
            throws IOException, MalformedModelException {
        try (Stream<Path> files = Files.list(directory)) {
            if (files.findAny().isEmpty()) {
                return Map.of();
            }
        }
        try (Model model = Model.newInstance("tiny-lm", Device.cpu())) {
            model.setBlock(new TinyLm(0));
            model.load(directory);
            return parametersOf(model);
        }
    }

    private static Map<String, float[]> parametersOf(Model model) {
        Map<String, float[]> parameters = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            parameters.put(pair.getKey(), pair.getValue().getArray().toFloatArray());
        }
        return parameters;
    }

    /**
     * Random next-token rows, in global batches of {@link #GLOBAL_BATCH}, in a fixed order or
     * shuffled each epoch by DJL's sampler.
     */
    private static ArrayDataset dataset(NDManager manager, long seed, boolean shuffle) {
        Random random = new Random(seed);
        int rows = GLOBAL_BATCH * BATCHES;
        int[] tokens = new int[rows * Scenario.SEQUENCE];
        int[] labels = new int[rows * Scenario.SEQUENCE];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = random.nextInt(TinyLm.VOCAB);
            labels[i] = random.nextInt(TinyLm.VOCAB);
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(tokens, new Shape(rows, Scenario.SEQUENCE)))
                .optLabels(manager.create(labels, new Shape(rows, Scenario.SEQUENCE, 1)))
                .setSampling(GLOBAL_BATCH, shuffle)
                .build();
    }
}
