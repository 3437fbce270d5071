package ai.djl.fsdp.zoo.lora;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.checkpoint.CheckpointMetadata;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.checkpoint.ShardedCheckpointReader;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.fsdp.zoo.sharded.ShardedSave;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * LoRA on GPT-2 with the frozen base stored in bfloat16, on every rank of a job: one step follows
 * float32's, and the adapters, a sharded checkpoint, the merged model and a Hugging Face checkpoint
 * go in and out without a float32 copy of the base being needed.
 */
final class LoraBf16Checks {

    /** bfloat16 keeps 8 significant bits: the loss of one step, relative. */
    static final double LOSS_TOLERANCE = 1e-2;

    /** The adapters' update after one SGD step, relative L2 to float32's update. */
    static final double UPDATE_TOLERANCE = 5e-2;

    private static final String NAME = "gpt2-tiny";
    private static final int SEED = 23;

    private LoraBf16Checks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args optionally a directory where the round trip also leaves its sharded checkpoint,
     *     for another number of ranks to resume from ({@link #resumesWhatTwoRanksSaved})
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            for (ShardingStrategy strategy :
                    List.of(ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP)) {
                stepFollowsFloat32(strategy, group);
            }
            roundTrips(group, args.length > 0 ? Path.of(args[0]) : null);
            loadsFromAFloat32HubCheckpoint(group);
        }
        System.out.println("checks passed");
    }

    /** One SGD step: the loss and the adapters' update within tolerance of float32's. */
    private static void stepFollowsFloat32(ShardingStrategy strategy, ProcessGroup group) {
        Map<String, float[]> before = new LinkedHashMap<>();
        Map<String, float[]> fp32 = new LinkedHashMap<>();
        Map<String, float[]> bf16 = new LinkedHashMap<>();
        double lossFp32 = train(strategy, MixedPrecision.FP32, group, before, fp32);
        double lossBf16 = train(strategy, MixedPrecision.BF16, group, null, bf16);
        double lossError = Math.abs(lossBf16 - lossFp32) / Math.abs(lossFp32);
        if (!(lossError <= LOSS_TOLERANCE)) {
            throw new AssertionError(strategy + ": bf16 loss " + lossBf16 + " vs " + lossFp32);
        }
        double worst = 0;
        for (Map.Entry<String, float[]> entry : fp32.entrySet()) {
            String name = entry.getKey();
            float[] start = before.get(name);
            float[] expected = entry.getValue();
            float[] actual = bf16.get(name);
            if (!name.contains("lora_")) {
                // The frozen base comes back as the bfloat16 rounding of what it was.
                assertEquals(strategy + " frozen " + name, bf16Rounded(start), actual);
                assertEquals(strategy + " fp32 frozen " + name, start, expected);
                continue;
            }
            double difference = 0;
            double update = 0;
            for (int i = 0; i < start.length; i++) {
                difference += Math.pow(actual[i] - expected[i], 2);
                update += Math.pow(expected[i] - start[i], 2);
            }
            if (update == 0) {
                continue; // B starts at zero, so A receives no gradient in the first step
            }
            double error = Math.sqrt(difference / update);
            worst = Math.max(worst, error);
            if (!(error <= UPDATE_TOLERANCE)) {
                throw new AssertionError(strategy + ": update of " + name + " error " + error);
            }
        }
        System.out.printf(
                "%s LoRA bf16 base: loss fp32 %.6f bf16 %.6f (rel %.1e), worst update error"
                        + " %.1e%n",
                strategy, lossFp32, lossBf16, lossError, worst);
    }

    private static double train(
            ShardingStrategy strategy,
            MixedPrecision precision,
            ProcessGroup group,
            Map<String, float[]> before,
            Map<String, float[]> after) {
        try (Model model = Model.newInstance(NAME, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(NAME, model.getNDManager(), SEED);
            Lora.apply(lm, lora(4));
            model.setBlock(lm);
            if (before != null) {
                before.putAll(values(lm));
            }
            double loss;
            try (FsdpTrainer trainer =
                    newTrainer(model, strategy, precision, true, false, group, null)) {
                loss = step(trainer, manager, SEED + 1 + group.getRank());
            } // closing gathers the parameters into the model
            after.putAll(values(lm));
            return loss;
        }
    }

    /**
     * With the base in bfloat16 after two AdamW steps: the adapters saved in PEFT's layout load
     * back exactly; a sharded checkpoint resumes a fresh trainer exactly (the base included); the
     * merged model is written in float32 from the bfloat16 base plus the float32 delta. The sharded
     * checkpoint stores the frozen base in bfloat16, the adapters and AdamW's moments in float32.
     *
     * @param keep where to leave a copy of the sharded checkpoint, or null
     */
    private static void roundTrips(ProcessGroup group, Path keep) throws IOException {
        Path directory = sharedTempDirectory(group);
        try (Model model = Model.newInstance(NAME, Device.cpu());
                Model resumed = Model.newInstance(NAME, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(NAME, model.getNDManager(), SEED);
            Lora.apply(lm, lora(4));
            model.setBlock(lm);
            // A different base and adapters: everything must come from the checkpoint.
            CausalLM other = TestModels.seeded(NAME, resumed.getNDManager(), SEED + 7);
            Lora.apply(other, lora(4));
            resumed.setBlock(other);
            double nextLoss;
            try (FsdpTrainer trainer =
                    newTrainer(
                            model,
                            ShardingStrategy.FULL_SHARD,
                            MixedPrecision.BF16,
                            true,
                            true,
                            group,
                            null)) {
                step(trainer, manager, SEED + 2);
                step(trainer, manager, SEED + 3);
                trainer.saveCheckpoint(directory.resolve("sharded"));
                if (keep != null) {
                    trainer.saveCheckpoint(keep);
                }
                ShardedSave.adapters(trainer, lora(4), directory.resolve("adapters"));
                ShardedSave.merged(trainer, lm, directory.resolve("merged"));
                nextLoss = step(trainer, manager, SEED + 4);
            }
            try (FsdpTrainer trainer =
                    newTrainer(
                            resumed,
                            ShardingStrategy.FULL_SHARD,
                            MixedPrecision.BF16,
                            true,
                            true,
                            group,
                            null)) {
                trainer.loadCheckpoint(directory.resolve("sharded"));
                double again = step(trainer, manager, SEED + 4);
                if (again != nextLoss) {
                    throw new AssertionError("resumed loss " + again + " vs " + nextLoss);
                }
            }
            Map<String, float[]> trained = values(lm);
            Map<String, float[]> resumedValues = values(other);
            trained.forEach(
                    (name, value) ->
                            assertEquals("resumed " + name, value, resumedValues.get(name)));
            if (group.getRank() == 0) {
                checkStoredTypes(directory.resolve("sharded"));
                checkAdaptersAndMerged(directory, manager);
            }
            group.barrier();
        } finally {
            if (group.getRank() == 0) {
                CheckpointDirectory.deleteTree(directory);
            }
        }
        System.out.println("adapters, sharded checkpoint and merged model round trip");
    }

    /**
     * The sharded checkpoint's files hold each tensor in the type its shard is stored in: the
     * frozen base in bfloat16, the adapters and their optimizer state in float32.
     */
    private static void checkStoredTypes(Path checkpoint) throws IOException {
        CheckpointMetadata metadata = CheckpointMetadata.read(checkpoint);
        int frozen = 0;
        for (Map.Entry<String, CheckpointMetadata.Tensor> entry :
                metadata.getTensors().entrySet()) {
            String name = entry.getKey();
            Dtype expected =
                    name.contains("lora_") || name.startsWith(CheckpointMetadata.OPTIMIZER_PREFIX)
                            ? Dtype.F32
                            : Dtype.BF16;
            frozen += expected == Dtype.BF16 ? 1 : 0;
            for (CheckpointMetadata.Chunk chunk : entry.getValue().getChunks()) {
                try (SafetensorsFile file =
                        SafetensorsFile.open(checkpoint.resolve(chunk.getFile()))) {
                    Dtype stored = file.info(chunk.getKey()).dtype();
                    if (!entry.getValue().getDtype().equals(expected.name())
                            || stored != expected) {
                        throw new AssertionError(
                                name
                                        + " is "
                                        + entry.getValue().getDtype()
                                        + " in metadata.json and "
                                        + stored
                                        + " in its file, not "
                                        + expected);
                    }
                }
            }
        }
        if (frozen == 0) {
            throw new AssertionError("the checkpoint holds no frozen tensor");
        }
    }

    /**
     * On one rank: a fresh trainer resumes the checkpoint two ranks saved (the frozen base stored
     * in bfloat16) and holds exactly its values, as a plain model reading it whole does.
     *
     * @param group a one-rank group
     * @param checkpoint the checkpoint {@link #main} left
     * @throws IOException if it cannot be read
     */
    static void resumesWhatTwoRanksSaved(ProcessGroup group, Path checkpoint) throws IOException {
        checkStoredTypes(checkpoint);
        try (Model resumed = Model.newInstance(NAME, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM other = TestModels.seeded(NAME, resumed.getNDManager(), SEED + 11);
            Lora.apply(other, lora(4));
            resumed.setBlock(other);
            try (FsdpTrainer trainer =
                    newTrainer(
                            resumed,
                            ShardingStrategy.FULL_SHARD,
                            MixedPrecision.BF16,
                            true,
                            true,
                            group,
                            null)) {
                trainer.loadCheckpoint(checkpoint);
            }
            CausalLM whole = TestModels.seeded(NAME, manager, SEED + 13);
            Lora.apply(whole, lora(4));
            ShardedCheckpointReader.loadInto(checkpoint, whole);
            Map<String, float[]> expected = values(whole);
            values(other)
                    .forEach(
                            (name, value) ->
                                    assertEquals("resumed " + name, expected.get(name), value));
        }
    }

    /** On rank 0: the saved adapters and merged model against the state before the third step. */
    private static void checkAdaptersAndMerged(Path directory, NDManager manager)
            throws IOException {
        try (SafetensorsCheckpoint merged =
                SafetensorsCheckpoint.open(directory.resolve("merged"))) {
            for (String name : merged.names()) {
                Dtype dtype = merged.info(name).dtype();
                if (dtype != Dtype.F32) {
                    throw new AssertionError("merged " + name + " is " + dtype + ", not F32");
                }
            }
        }
        // The adapters on a bfloat16-rounded base compute what the merged model computes.
        CausalLM base = TestModels.seeded(NAME, manager, SEED);
        for (Pair<String, Parameter> pair : base.getParameters()) {
            NDArray array = pair.getValue().getArray();
            array.set(bf16Rounded(array.toFloatArray()));
        }
        Lora.load(base, directory.resolve("adapters"));
        CausalLM loaded = Models.load(directory.resolve("merged"), manager);
        NDArray ids = TestModels.tokens(manager, 2, 12, SEED + 5);
        float diff =
                TestModels.maxDiff(
                        TestModels.logits(base, ids, null), TestModels.logits(loaded, ids, null));
        if (!(diff <= 1e-4f)) {
            throw new AssertionError("merged vs adapters on the bf16 base: " + diff);
        }
        Lora.merge(base);
        Map<String, float[]> merged = values(base);
        values(loaded)
                .forEach(
                        (name, value) -> {
                            float[] expected = merged.get(name);
                            for (int i = 0; i < value.length; i++) {
                                if (Math.abs(value[i] - expected[i]) > 1e-6f) {
                                    throw new AssertionError("merged " + name + " at " + i);
                                }
                            }
                        });
    }

    /** Sharding straight from a float32 Hugging Face checkpoint into bfloat16 shards. */
    private static void loadsFromAFloat32HubCheckpoint(ProcessGroup group) throws IOException {
        Path directory = sharedTempDirectory(group);
        try (Model model = Model.newInstance(NAME, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM saved = TestModels.seeded(NAME, manager, SEED + 9);
            if (group.getRank() == 0) {
                HfCheckpoint.save(saved, directory);
            }
            group.barrier();
            Map<String, float[]> original = new LinkedHashMap<>();
            StateDict.parameters(saved)
                    .forEach((name, p) -> original.put(name, p.getArray().toFloatArray()));
            CausalLM empty = Models.forCheckpoint(ModelFamilies.read(directory));
            model.setBlock(empty);
            FsdpTrainer trainer;
            try (CheckpointShardSource source = HfCheckpoint.shardSource(empty, directory)) {
                Lora.apply(empty, lora(4));
                trainer =
                        newTrainer(
                                model,
                                ShardingStrategy.FULL_SHARD,
                                MixedPrecision.BF16,
                                true,
                                true,
                                group,
                                source);
                trainer.initialize(new Shape(1, 1)); // unit by unit, reading the shards
            }
            trainer.close(); // gathers the base, in float32, into the model
            // Under the plain model's names: an adapted weight is its base layer's.
            Map<String, Parameter> loaded = Lora.mergedParameters(empty);
            original.forEach(
                    (name, value) ->
                            assertEquals(
                                    "loaded " + name,
                                    bf16Rounded(value),
                                    loaded.get(name).getArray().toFloatArray()));
            group.barrier();
        } finally {
            if (group.getRank() == 0) {
                CheckpointDirectory.deleteTree(directory);
            }
        }
        System.out.println("float32 hub checkpoint sharded into bfloat16");
    }

    /** Rank 0 makes a temporary directory and every rank learns its name. */
    private static Path sharedTempDirectory(ProcessGroup group) throws IOException {
        Path root = Path.of(System.getProperty("java.io.tmpdir"));
        Path directory = root.resolve("lora-bf16-" + ProcessHandle.current().pid());
        try (NDManager manager = TestModels.newManager()) {
            NDArray pid = manager.create(new long[] {ProcessHandle.current().pid()});
            group.broadcast(pid, 0);
            directory = root.resolve("lora-bf16-" + pid.toLongArray()[0]);
        }
        if (group.getRank() == 0) {
            Files.createDirectories(directory);
        }
        group.barrier();
        return directory;
    }

    static LoraConfig lora(int rank) {
        return LoraConfig.builder()
                .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                .optRank(rank)
                .optAlpha(2 * rank)
                .build();
    }

    /**
     * Returns this rank's parameter-shard bytes of a freshly initialized LoRA model of {@code
     * shape} sharded (FULL_SHARD) in {@code precision}.
     */
    static long shardedParameterBytes(
            GPT2Config shape, MixedPrecision precision, ProcessGroup group) {
        try (Model model = Model.newInstance("gpt2-shape", Device.cpu())) {
            CausalLM lm = Models.create(shape, model.getNDManager());
            Lora.apply(lm, lora(8));
            model.setBlock(lm);
            try (FsdpTrainer trainer =
                    newTrainer(
                            model,
                            ShardingStrategy.FULL_SHARD,
                            precision,
                            true,
                            false,
                            group,
                            null)) {
                return trainer.getShardingStats().parameterBytes();
            }
        }
    }

    static FsdpTrainer newTrainer(
            Model model,
            ShardingStrategy strategy,
            MixedPrecision precision,
            boolean frozenInComputePrecision,
            boolean adamW,
            ProcessGroup group,
            ParameterSource source) {
        Optimizer optimizer =
                adamW
                        ? Optimizer.adamW().optLearningRateTracker(Tracker.fixed(1e-2f)).build()
                        : Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.5f)).build();
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optOptimizer(optimizer)
                        .optDevices(new Device[] {Device.cpu()});
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(strategy)
                        .optMixedPrecision(precision)
                        .optFrozenInComputePrecision(frozenInComputePrecision)
                        .optWrapPolicy(
                                WrapPolicy.byLayerClass(
                                        ((CausalLM) model.getBlock())
                                                .decoderLayerClass()
                                                .getSimpleName()))
                        .build();
        TrainerOptions options = TrainerOptions.builder().optInitialValues(source).build();
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp, options);
    }

    /** One step on tokens drawn from {@code seed}; returns the loss. */
    static double step(FsdpTrainer trainer, NDManager manager, int seed) {
        try (NDManager scope = manager.newSubManager()) {
            NDArray tokens = TestModels.tokens(scope, 2, 13, seed);
            NDList inputs = new NDList(tokens.get(":, 0:12"));
            NDList labels = new NDList(tokens.get(":, 1:13"));
            double loss;
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList outputs = trainer.forward(inputs, labels);
                NDArray value = trainer.getLoss().evaluate(labels, outputs);
                loss = value.getFloat();
                collector.backward(value);
            }
            trainer.step();
            return loss;
        }
    }

    private static Map<String, float[]> values(CausalLM lm) {
        Map<String, float[]> values = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : lm.getParameters()) {
            values.putIfAbsent(pair.getKey(), pair.getValue().getArray().toFloatArray());
        }
        return values;
    }

    /** Rounds float32 values to bfloat16 (to nearest even) and back, through libtorch. */
    static float[] bf16Rounded(float[] values) {
        try (NDManager manager = TestModels.newManager()) {
            NDArray rounded = Precision.BFLOAT16.cast(manager.create(values));
            return Precision.FLOAT32.cast(rounded).toFloatArray();
        }
    }

    private static void assertEquals(String what, float[] expected, float[] actual) {
        if (!java.util.Arrays.equals(expected, actual)) {
            throw new AssertionError(what + " differs");
        }
    }
}
