package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.basicmodelzoo.basic.Mlp;
import ai.djl.basicmodelzoo.cv.classification.ResNetV1;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.LambdaBlock;
import ai.djl.nn.ParallelBlock;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.nn.norm.LayerNorm;
import ai.djl.nn.transformer.IdEmbedding;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.ParameterStore;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingResult;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import com.google.gson.Gson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Three DJL programs as a user writes them from DJL's documentation, run by {@code EasyTrain.fit}
 * with DJL's ordinary trainer on the global batch, or with FSDP on each rank's slice of it: DJL's
 * {@code ResNetV1} (BatchNorm), its {@code Mlp}, and a regression of a {@code SequentialBlock}
 * holding a {@code ParallelBlock} and a {@code LayerNorm}.
 */
final class ExistingPrograms {

    static final int EPOCHS = 2;
    static final int GLOBAL_BATCH = 8;
    static final int BATCHES = 4;
    static final int VALIDATION_BATCHES = 2;
    static final int VOCABULARY = 16;

    /** The programs. */
    enum Program {
        RESNET(new Shape(3, 28, 28), 10, "ParallelBlock"),
        /** The same ResNet with its convolutions as the units: every BatchNorm in the root. */
        RESNET_CONVOLUTIONS(new Shape(3, 28, 28), 10, "Conv2d"),
        MLP(new Shape(20), 10, "Linear"),
        REGRESSION(new Shape(8), 0, "ParallelBlock"),
        /** Token ids through an embedding into a BatchNorm: what trains in float16 on a CPU. */
        TOKENS(new Shape(4), 10, "SequentialBlock");

        final Shape input;
        final int classes;
        final String unitClass;

        Program(Shape input, int classes, String unitClass) {
            this.input = input;
            this.classes = classes;
            this.unitClass = unitClass;
        }

        Block block() {
            return switch (this) {
                case RESNET, RESNET_CONVOLUTIONS ->
                        ResNetV1.builder()
                                .setImageShape(input)
                                .setNumLayers(20)
                                .setOutSize(classes)
                                .build();
                case MLP -> new Mlp(20, classes, new int[] {32, 16});
                case REGRESSION ->
                        new SequentialBlock()
                                .add(Linear.builder().setUnits(16).build())
                                .add(Activation.reluBlock())
                                .add(
                                        new ParallelBlock(
                                                list ->
                                                        new NDList(
                                                                NDArrays.add(
                                                                        list.get(0)
                                                                                .singletonOrThrow(),
                                                                        list.get(1)
                                                                                .singletonOrThrow())),
                                                List.of(
                                                        new SequentialBlock()
                                                                .add(
                                                                        Linear.builder()
                                                                                .setUnits(16)
                                                                                .build())
                                                                .add(LayerNorm.builder().build()),
                                                        Blocks.identityBlock())))
                                .add(Linear.builder().setUnits(1).build());
                case TOKENS ->
                        new SequentialBlock()
                                .add(
                                        new LambdaBlock(
                                                x ->
                                                        new NDList(
                                                                x.head()
                                                                        .toType(
                                                                                DataType.INT32,
                                                                                false))))
                                .add(
                                        new IdEmbedding.Builder()
                                                .setDictionarySize(VOCABULARY)
                                                .setEmbeddingSize(8)
                                                .build())
                                .add(
                                        new SequentialBlock()
                                                .add(BatchNorm.builder().build())
                                                .add(Linear.builder().setUnits(8).build()))
                                .add(Blocks.batchFlattenBlock())
                                .add(Linear.builder().setUnits(classes).build());
            };
        }
    }

    /** What a run reported and ended with (serialized with Gson between the ranks and the test). */
    static final class Figures {
        float trainLoss;
        float validateLoss;
        float trainAccuracy;
        float validateAccuracy;
        Map<String, float[]> buffers = new LinkedHashMap<>();
        Map<String, float[]> parameters = new LinkedHashMap<>();

        /** The trained model's logits for the first validation batch. */
        float[] predictions;

        /** The same from the model saved with {@code Model.save} and read by {@code Model.load}. */
        float[] loadedPredictions;

        /** Buffers and parameters of a fresh trainer that loaded the sharded checkpoint. */
        Map<String, float[]> resumed = new LinkedHashMap<>();

        void write(Path file) throws java.io.IOException {
            Files.writeString(file, new Gson().toJson(this));
        }

        static Figures read(Path file) throws java.io.IOException {
            return new Gson().fromJson(Files.readString(file), Figures.class);
        }
    }

    private ExistingPrograms() {}

    /**
     * How a run differs from the ordinary one.
     *
     * @param syncBatchNorm FSDP with synchronized batch statistics ({@code optSyncBatchNorm})
     * @param learningRate SGD's learning rate
     */
    record Variant(boolean syncBatchNorm, float learningRate) {
        static final Variant ORDINARY = new Variant(false, 0.05f);

        /**
         * The learning rate of {@link SyncBatchNormTest}: ResNet's training amplifies last-bit
         * differences (one flips the ReLU of an activation near zero, and the step moves the
         * weights by what that changes), by more the larger the learning rate; a small one keeps
         * that drift well below what unsynchronized statistics change.
         */
        static final float SMALL_LEARNING_RATE = 0.002f;

        /** {@code sync}: synchronized statistics, {@code local}: not; both at the small rate. */
        static Variant of(String name) {
            return switch (name) {
                case "sync" -> new Variant(true, SMALL_LEARNING_RATE);
                case "local" -> new Variant(false, SMALL_LEARNING_RATE);
                default -> throw new IllegalArgumentException("variant sync or local: " + name);
            };
        }
    }

    /**
     * Trains {@code program} for {@link #EPOCHS} epochs: with DJL's trainer when {@code group} is
     * null, else with FSDP in {@code strategy} and {@code precision}, saving the model into {@code
     * directory} and a sharded checkpoint into {@code checkpoint} (a directory every rank shares).
     */
    static Figures fit(
            Program program,
            ProcessGroup group,
            ShardingStrategy strategy,
            MixedPrecision precision,
            Variant variant,
            Path directory,
            Path checkpoint)
            throws Exception {
        DefaultTrainingConfig config =
                config(program, variant).addTrainingListeners(TrainingListener.Defaults.basic());
        if (program.classes > 0) {
            config.addEvaluator(new Accuracy());
        }
        Figures figures = new Figures();
        Files.createDirectories(directory);
        try (Model model = Model.newInstance(program.name(), Device.cpu());
                NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            model.setBlock(program.block());
            ArrayDataset train = dataset(manager, program, BATCHES, 1);
            ArrayDataset validation = dataset(manager, program, VALIDATION_BATCHES, 2);
            NDList probe = new NDList(validation.get(manager, 0).getData().head().expandDims(0));
            try (Trainer trainer =
                    group == null
                            ? model.newTrainer(config)
                            : FullyShardedDataParallel.newTrainer(
                                    model,
                                    config,
                                    group,
                                    fsdpConfig(program, strategy, precision, variant))) {
                Engine.getInstance().setRandomSeed(1234);
                trainer.initialize(new Shape(GLOBAL_BATCH).addAll(program.input));
                EasyTrain.fit(trainer, EPOCHS, train, validation);
                TrainingResult result = trainer.getTrainingResult();
                figures.trainLoss = result.getTrainLoss();
                figures.validateLoss = result.getValidateLoss();
                if (program.classes > 0) {
                    figures.trainAccuracy = result.getTrainEvaluation("Accuracy");
                    figures.validateAccuracy = result.getValidateEvaluation("Accuracy");
                }
                if (trainer instanceof FsdpTrainer fsdp) {
                    fsdp.saveCheckpoint(checkpoint);
                }
            }
            for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
                Parameter parameter = pair.getValue();
                (UnitPlan.isBuffer(parameter) ? figures.buffers : figures.parameters)
                        .put(pair.getKey(), parameter.getArray().toFloatArray());
            }
            figures.predictions = predict(model, probe);
            model.save(directory, "model");
        }
        try (Model loaded = Model.newInstance(program.name(), Device.cpu());
                NDManager manager = NDManager.newBaseManager(Device.cpu())) {
            loaded.setBlock(program.block());
            loaded.load(directory, "model");
            ArrayDataset validation = dataset(manager, program, VALIDATION_BATCHES, 2);
            figures.loadedPredictions =
                    predict(
                            loaded,
                            new NDList(validation.get(manager, 0).getData().head().expandDims(0)));
        }
        if (group != null) {
            figures.resumed =
                    resume(
                            program,
                            group,
                            fsdpConfig(program, strategy, precision, variant),
                            checkpoint);
        }
        return figures;
    }

    private static FsdpConfig fsdpConfig(
            Program program, ShardingStrategy strategy, MixedPrecision precision, Variant variant) {
        return FsdpConfig.builder()
                .optShardingStrategy(strategy)
                .optMixedPrecision(precision)
                .optSyncBatchNorm(variant.syncBatchNorm())
                .optWrapPolicy(WrapPolicy.byLayerClass(program.unitClass))
                .build();
    }

    /** The program's loss, SGD at the variant's learning rate, and the CPU. */
    private static DefaultTrainingConfig config(Program program, Variant variant) {
        return new DefaultTrainingConfig(
                        program.classes > 0 ? Loss.softmaxCrossEntropyLoss() : Loss.l2Loss())
                .optOptimizer(
                        Optimizer.sgd()
                                .setLearningRateTracker(Tracker.fixed(variant.learningRate()))
                                .build())
                .optDevices(new Device[] {Device.cpu()});
    }

    /** A fresh model and trainer that load the checkpoint: its values, gathered on close. */
    private static Map<String, float[]> resume(
            Program program, ProcessGroup group, FsdpConfig fsdp, Path checkpoint)
            throws Exception {
        DefaultTrainingConfig config = config(program, Variant.ORDINARY);
        Map<String, float[]> values = new LinkedHashMap<>();
        try (Model model = Model.newInstance(program.name(), Device.cpu())) {
            model.setBlock(program.block());
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(model, config, group, fsdp)) {
                Engine.getInstance().setRandomSeed(99);
                trainer.initialize(new Shape(GLOBAL_BATCH).addAll(program.input));
                trainer.loadCheckpoint(checkpoint);
            }
            for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
                values.put(pair.getKey(), pair.getValue().getArray().toFloatArray());
            }
        }
        return values;
    }

    private static float[] predict(Model model, NDList input) {
        try (NDManager scope = NDManager.newBaseManager(Device.cpu())) {
            ParameterStore store = new ParameterStore(scope, false);
            return model.getBlock().forward(store, input, false).head().toFloatArray();
        }
    }

    /** Fixed random inputs and targets in global batches, in a fixed order. */
    private static ArrayDataset dataset(
            NDManager manager, Program program, int batches, long seed) {
        Random random = new Random(seed);
        int rows = GLOBAL_BATCH * batches;
        int width = (int) program.input.size();
        float[] data = new float[rows * width];
        for (int i = 0; i < data.length; i++) {
            data[i] =
                    program == Program.TOKENS
                            ? random.nextInt(VOCABULARY)
                            : (float) random.nextGaussian();
        }
        float[] labels = new float[rows];
        for (int i = 0; i < rows; i++) {
            labels[i] =
                    program.classes > 0
                            ? random.nextInt(program.classes)
                            : (float) random.nextGaussian();
        }
        return new ArrayDataset.Builder()
                .setData(manager.create(data, new Shape(rows).addAll(program.input)))
                .optLabels(
                        manager.create(
                                labels, program.classes > 0 ? new Shape(rows) : new Shape(rows, 1)))
                .setSampling(GLOBAL_BATCH, false)
                .build();
    }

    /** Returns the largest absolute difference between two maps of arrays of the same keys. */
    static double maxDifference(Map<String, float[]> a, Map<String, float[]> b) {
        if (!a.keySet().equals(b.keySet())) {
            throw new AssertionError("different names: " + a.keySet() + " and " + b.keySet());
        }
        double max = 0;
        for (String name : a.keySet()) {
            max = Math.max(max, maxDifference(a.get(name), b.get(name)));
        }
        return max;
    }

    static double maxDifference(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new AssertionError("lengths " + a.length + " and " + b.length);
        }
        double max = 0;
        for (int i = 0; i < a.length; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }

    /**
     * Returns the largest difference of {@code actual} from {@code expected}, relative to the
     * expected value where that is above 1 in magnitude, absolute below.
     */
    static double maxRelativeDifference(
            Map<String, float[]> expected, Map<String, float[]> actual) {
        double max = 0;
        for (Map.Entry<String, float[]> entry : expected.entrySet()) {
            float[] e = entry.getValue();
            float[] a = actual.get(entry.getKey());
            for (int i = 0; i < e.length; i++) {
                max = Math.max(max, Math.abs(a[i] - e[i]) / Math.max(1, Math.abs(e[i])));
            }
        }
        return max;
    }
}
