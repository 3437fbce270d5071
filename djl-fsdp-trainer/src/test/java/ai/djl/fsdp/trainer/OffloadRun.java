package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.internal.runtime.FsdpUnit;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.NormalInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * One run of {@link TinyLm} for the offload and initialization tests: FULL_SHARD with AdamW, CPU
 * offload on or off, most parameters frozen or none, the model initialized by the trainer (unit by
 * unit) or before it (whole), then a few steps.
 *
 * @param offload whether shards, gradients and optimizer state are offloaded
 * @param mostlyFrozen whether every parameter but the head's bias and the last unit's is frozen
 * @param deferredInit whether the trainer initializes the model (else it comes initialized)
 * @param steps optimizer steps (0: only initialize, shard and gather back)
 * @param fromSource whether the shards are read from a {@link ParameterSource} holding the negated
 *     reference values (as from a checkpoint), counting the elements read
 */
record OffloadRun(
        boolean offload,
        boolean mostlyFrozen,
        boolean deferredInit,
        int steps,
        boolean fromSource) {

    OffloadRun(boolean offload, boolean mostlyFrozen, boolean deferredInit, int steps) {
        this(offload, mostlyFrozen, deferredInit, steps, false);
    }

    static final int LOCAL_BATCH = 2;
    static final int SEQUENCE = 3;
    static final int SEED = 1234;

    /**
     * What a run gave.
     *
     * @param losses each step's loss on this rank
     * @param parameters the model's parameters after the trainer closed (gathered back)
     * @param memory the trainer's memory figures after the last step
     * @param figures bytes from the units' layouts: root, largest other unit, whole model (all
     *     unpadded), trainable shards of this rank, this rank's largest full buffers gathered at
     *     once in FULL_SHARD with prefetch (root, and two units: the current and the prefetched),
     *     the elements read from the source, and whether the start drew random numbers (1, or 0
     *     where it drew none)
     */
    record Result(
            double[] losses,
            Map<String, float[]> parameters,
            MemoryStats memory,
            Map<String, Long> figures) {}

    String describe() {
        return "offload=" + offload + " mostlyFrozen=" + mostlyFrozen + " deferred=" + deferredInit;
    }

    Result run(ProcessGroup group) {
        try (Model model = Model.newInstance("tiny-lm", group.getDevice())) {
            model.setBlock(new TinyLm(0f));
            if (mostlyFrozen) {
                freezeMostly(model.getBlock());
            }
            double[] losses = new double[steps];
            MemoryStats memory;
            Map<String, Long> figures;
            long[] elementsRead = {0};
            TrainerOptions.Builder options = TrainerOptions.builder();
            if (fromSource) {
                options.optInitialValues(negatedReference(model, elementsRead));
            }
            Engine.getInstance().setRandomSeed(SEED);
            if (!deferredInit) {
                initializeWhole(model);
            }
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model,
                            trainingConfig(group.getDevice()),
                            group,
                            fsdpConfig(),
                            options.build())) {
                long drew = 1;
                if (deferredInit) {
                    trainer.initialize(new Shape(LOCAL_BATCH, SEQUENCE));
                    drew = drewSinceSeeded(model.getNDManager());
                }
                for (int step = 0; step < steps; step++) {
                    losses[step] = trainOn(trainer, step, group.getRank() * LOCAL_BATCH);
                }
                memory = trainer.getMemoryStats();
                figures = figures(trainer);
                figures.put("elementsRead", elementsRead[0]);
                figures.put("drewAtStart", drew);
            }
            return new Result(losses, parametersOf(model), memory, figures);
        }
    }

    /**
     * Returns 1 if the engine's generator has drawn since it was seeded with {@link #SEED}, 0 if
     * not; it is seeded again either way.
     */
    private static long drewSinceSeeded(NDManager manager) {
        try (NDArray now = manager.randomUniform(0f, 1f, new Shape(4))) {
            Engine.getInstance().setRandomSeed(SEED);
            try (NDArray first = manager.randomUniform(0f, 1f, new Shape(4))) {
                long drew = now.contentEquals(first) ? 0 : 1;
                Engine.getInstance().setRandomSeed(SEED);
                return drew;
            }
        }
    }

    /** Initializes the model as DJL's own trainer does, with the same seed: the reference. */
    static Map<String, float[]> referenceInitialization(boolean mostlyFrozen) {
        try (Model model = Model.newInstance("tiny-lm", Device.cpu())) {
            model.setBlock(new TinyLm(0f));
            if (mostlyFrozen) {
                freezeMostly(model.getBlock());
            }
            Engine.getInstance().setRandomSeed(SEED);
            try (Trainer trainer = model.newTrainer(trainingConfig(Device.cpu()))) {
                trainer.initialize(new Shape(LOCAL_BATCH, SEQUENCE));
            }
            return parametersOf(model);
        }
    }

    /** A source of the reference values negated, keyed as DJL names the model's parameters. */
    private ParameterSource negatedReference(Model model, long[] elementsRead) {
        Map<String, float[]> reference = referenceInitialization(mostlyFrozen);
        Map<String, String> nameById = new HashMap<>();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            nameById.put(pair.getValue().getId(), pair.getKey());
        }
        return (manager, parameter, from, to) -> {
            float[] values = reference.get(nameById.get(parameter.getId()));
            float[] piece = new float[(int) (to - from)];
            for (int i = 0; i < piece.length; i++) {
                piece[i] = -values[(int) from + i];
            }
            elementsRead[0] += piece.length;
            return manager.create(piece);
        };
    }

    private void initializeWhole(Model model) {
        DefaultTrainingConfig config = trainingConfig(model.getNDManager().getDevice());
        for (Pair<ai.djl.training.initializer.Initializer, java.util.function.Predicate<Parameter>>
                pair : config.getInitializers()) {
            model.getBlock().setInitializer(pair.getKey(), pair.getValue());
        }
        model.getBlock()
                .initialize(
                        model.getNDManager(), DataType.FLOAT32, new Shape(LOCAL_BATCH, SEQUENCE));
    }

    private static void freezeMostly(Block block) {
        for (Pair<String, Parameter> pair : block.getParameters()) {
            String name = pair.getKey();
            // DJL names a child's parameters after it, numbered: "03mixer2_linear_weight".
            pair.getValue().freeze(!name.equals("headBias") && !name.contains("mixer2"));
        }
    }

    private static DefaultTrainingConfig trainingConfig(Device device) {
        return new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optInitializer(new NormalInitializer(0.5f), Parameter.Type.WEIGHT)
                .optOptimizer(
                        Optimizer.adamW().optLearningRateTracker(Tracker.fixed(0.05f)).build())
                .optDevices(new Device[] {device});
    }

    private FsdpConfig fsdpConfig() {
        return FsdpConfig.builder()
                .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                .optWrapPolicy(WrapPolicy.byLayerClass("MixerBlock"))
                .optCpuOffload(offload)
                .build();
    }

    private static double trainOn(FsdpTrainer trainer, int step, int firstRow) {
        try (NDManager scope = trainer.getManager().newSubManager()) {
            Random random = new Random(1000L + step);
            int[] data = new int[LOCAL_BATCH * SEQUENCE];
            int[] labels = new int[LOCAL_BATCH * SEQUENCE];
            int[][] rows = new int[firstRow + LOCAL_BATCH][SEQUENCE + 1];
            for (int[] row : rows) {
                for (int t = 0; t < row.length; t++) {
                    row[t] = random.nextInt(TinyLm.VOCAB);
                }
            }
            for (int r = 0; r < LOCAL_BATCH; r++) {
                for (int t = 0; t < SEQUENCE; t++) {
                    data[r * SEQUENCE + t] = rows[firstRow + r][t];
                    labels[r * SEQUENCE + t] = rows[firstRow + r][t + 1];
                }
            }
            NDList x = new NDList(scope.create(data, new Shape(LOCAL_BATCH, SEQUENCE)));
            NDList y = new NDList(scope.create(labels, new Shape(LOCAL_BATCH, SEQUENCE, 1)));
            double loss;
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray value = trainer.getLoss().evaluate(y, trainer.forward(x, y));
                loss = value.getFloat();
                collector.backward(value);
            }
            trainer.step();
            return loss;
        }
    }

    private static Map<String, Long> figures(FsdpTrainer trainer) {
        long root = 0;
        long rootPadded = 0;
        long largestUnit = 0;
        long largestUnitPadded = 0;
        long total = 0;
        long trainableShards = 0;
        for (FsdpUnit unit : trainer.sharded().getModel().getUnits()) {
            long bytes = 0;
            long padded = 0;
            for (FlatParameter flat : unit.getFlatParameters()) {
                bytes += flat.getLayout().getNumel() * 4;
                padded += flat.getLayout().getPaddedNumel() * 4;
                if (flat.isTrainable()) {
                    trainableShards += flat.getShardBytes();
                }
            }
            total += bytes;
            if (unit.getIndex() == 0) {
                root = bytes;
                rootPadded = padded;
            } else {
                largestUnit = Math.max(largestUnit, bytes);
                largestUnitPadded = Math.max(largestUnitPadded, padded);
            }
        }
        Map<String, Long> figures = new LinkedHashMap<>();
        figures.put("root", root);
        figures.put("largestUnit", largestUnit);
        figures.put("total", total);
        figures.put("trainableShards", trainableShards);
        figures.put("gatheredBound", rootPadded + 2 * largestUnitPadded);
        return figures;
    }

    private static Map<String, float[]> parametersOf(Model model) {
        Map<String, float[]> parameters = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : model.getBlock().getParameters()) {
            parameters.put(pair.getKey(), pair.getValue().getArray().toFloatArray());
        }
        return parameters;
    }

    static void write(Path file, Result result) throws IOException {
        MemoryStats m = result.memory();
        long[] memory = {
            m.cpuOffload() ? 1 : 0,
            m.shardBytes(),
            m.gradientBytes(),
            m.optimizerStateBytes(),
            m.peakGatheredBytes(),
            m.initPeakParameterBytes()
        };
        try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(file))) {
            out.writeObject(result.losses());
            out.writeObject(new LinkedHashMap<>(result.parameters()));
            out.writeObject(memory);
            out.writeObject(new LinkedHashMap<>(result.figures()));
        }
    }

    @SuppressWarnings("unchecked")
    static Result read(Path file) throws IOException, ClassNotFoundException {
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(file))) {
            double[] losses = (double[]) in.readObject();
            Map<String, float[]> parameters = (Map<String, float[]>) in.readObject();
            long[] m = (long[]) in.readObject();
            Map<String, Long> figures = (Map<String, Long>) in.readObject();
            return new Result(
                    losses,
                    parameters,
                    new MemoryStats(m[0] == 1, m[1], m[2], m[3], m[4], m[5]),
                    figures);
        }
    }
}
