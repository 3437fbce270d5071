package ai.djl.fsdp.zoo.finetune;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
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
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Checks of the zoo's models under FSDP that every rank runs, on one rank in-process or on several
 * as separate processes ({@link #main}): a failed check throws, and a rank that throws fails the
 * job.
 *
 * <ul>
 *   <li>For fixed weights and inputs, the logits do not depend on how the model is wrapped and
 *       sharded: every strategy gives the plain model's logits.
 *   <li>LoRA at initialization gives exactly the base model's logits under FSDP, and only the
 *       adapters carry gradients and optimizer state.
 *   <li>After a few steps of LoRA training under FSDP, the merged model's logits equal the adapted
 *       model's, whether merged whole after gathering or one unit at a time into a saved file (when
 *       only one unit at a time holds full parameters); closing without gathering leaves every
 *       parameter empty.
 *   <li>A model sharded straight from a checkpoint, each rank reading its own shards, with or
 *       without adapters added, computes what the saved model computes.
 * </ul>
 */
final class ShardedZooChecks {

    private static final float TOLERANCE = 2e-5f;
    private static final int SEED = 11;

    private ShardedZooChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args none
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            runAll(group);
        }
        System.out.println("checks passed");
    }

    /** Runs every check for both architectures. */
    static void runAll(ProcessGroup group) {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            for (ShardingStrategy strategy : ShardingStrategy.values()) {
                if (strategy.isHybrid()) {
                    continue; // HybridShardingTest
                }
                logitsDoNotDependOnSharding(name, strategy, group);
                loraStartsAtTheBaseModel(name, strategy, group);
            }
            for (ShardingStrategy strategy : ShardingStrategy.values()) {
                for (boolean withLora : new boolean[] {false, true}) {
                    fusedHeadTrainsAsLogits(name, strategy, withLora, group);
                }
            }
            mergedEqualsAdaptedAfterTraining(name, group);
            closingWithoutGatheringLeavesNoFullParameters(name, group);
            for (boolean withLora : new boolean[] {false, true}) {
                shardsLoadStraightFromACheckpoint(name, withLora, group);
            }
        }
    }

    /**
     * A model built without values and sharded from a checkpoint (each rank reading its own shards)
     * computes what the model that was saved computes.
     */
    private static void shardsLoadStraightFromACheckpoint(
            String name, boolean withLora, ProcessGroup group) {
        Path directory = null;
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            directory = Files.createTempDirectory("sharded-load");
            CausalLM saved = TestModels.seeded(name, manager, SEED + 3);
            HfCheckpoint.save(saved, directory);
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED);
            NDArray expected = TestModels.logits(saved, ids, null);
            CausalLM empty = Models.forCheckpoint(ModelFamilies.read(directory));
            model.setBlock(empty);
            FsdpTrainer trainer;
            long bound;
            try (CheckpointShardSource source = HfCheckpoint.shardSource(empty, directory)) {
                if (withLora) {
                    Lora.apply(empty, lora());
                }
                // Counted while the tree still holds the layers as they are.
                bound = rootAndLargestLayerBytes(empty);
                trainer = newTrainer(model, ShardingStrategy.FULL_SHARD, group, 1e-3f, source);
                trainer.initialize(new Shape(1, 1)); // unit by unit, reading the shards
            }
            try (trainer) {
                // Initialized unit by unit: a rank held at most the root's parameters and one
                // decoder layer's at once, never the whole model's.
                long wholeBytes = 4 * Lora.count(empty).all();
                long heldBytes = trainer.getMemoryStats().initPeakParameterBytes();
                if (heldBytes <= 0 || heldBytes > bound || bound >= wholeBytes) {
                    throw new AssertionError(
                            name
                                    + " held "
                                    + heldBytes
                                    + " bytes of full parameters while initializing; the root and"
                                    + " the largest layer are "
                                    + bound
                                    + ", the whole model "
                                    + wholeBytes);
                }
                check(
                        name + (withLora ? " with LoRA" : "") + " sharded from a checkpoint",
                        expected,
                        trainer.evaluate(new NDList(ids)).head(),
                        TOLERANCE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            deleteQuietly(directory);
        }
    }

    /** Returns the bytes of the parameters outside the decoder layers and of the largest layer. */
    private static long rootAndLargestLayerBytes(CausalLM lm) {
        long layersBytes = 0;
        long largestLayerBytes = 0;
        for (Block block : StateDict.modules(lm).values()) {
            if (lm.decoderLayerClass().isInstance(block)) {
                long bytes = 0;
                for (Pair<String, Parameter> pair : block.getParameters()) {
                    bytes += 4 * pair.getValue().getShape().size();
                }
                layersBytes += bytes;
                largestLayerBytes = Math.max(largestLayerBytes, bytes);
            }
        }
        return 4 * Lora.count(lm).all() - layersBytes + largestLayerBytes;
    }

    private static void deleteQuietly(Path directory) {
        if (directory == null) {
            return;
        }
        try (Stream<Path> walk = Files.walk(directory)) {
            walk.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void logitsDoNotDependOnSharding(
            String name, ShardingStrategy strategy, ProcessGroup group) {
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED);
            NDArray expected = TestModels.logits(lm, ids, null);
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, strategy, group, 1e-3f)) {
                NDArray actual = trainer.evaluate(new NDList(ids)).head();
                check(name + " " + strategy + " logits", expected, actual, TOLERANCE);
            }
        }
    }

    /**
     * Training with the loss computing the head's product from the hidden states (the head tied to
     * the embedding in GPT-2, a root parameter) changes the model as training from logits does;
     * with LoRA adapters, whose frozen head needs no weight gradient, too.
     */
    private static void fusedHeadTrainsAsLogits(
            String name, ShardingStrategy strategy, boolean withLora, ProcessGroup group) {
        String what = name + " " + strategy + (withLora ? " LoRA" : "") + " fused head";
        try (NDManager manager = TestModels.newManager()) {
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED + 1);
            NDArray base = null;
            NDArray[] trained = new NDArray[2];
            for (int fused = 0; fused < 2; fused++) {
                try (Model model = Model.newInstance(name, Device.cpu())) {
                    CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
                    if (base == null) {
                        base = TestModels.logits(lm, ids, null);
                        base.attach(manager);
                    }
                    if (withLora) {
                        Lora.apply(lm, lora());
                    }
                    lm.setFusedLossHead(fused == 1);
                    model.setBlock(lm);
                    try (FsdpTrainer trainer = newTrainer(model, strategy, group, 1e-2f)) {
                        train(trainer, manager, 2);
                        trained[fused] = trainer.evaluate(new NDList(ids)).head();
                        trained[fused].attach(manager);
                    }
                }
            }
            if (TestModels.maxDiff(base, trained[1]) < 1e-3f) {
                throw new AssertionError(what + ": training did not change the logits");
            }
            check(what, trained[0], trained[1], 1e-4f);
        }
    }

    private static void loraStartsAtTheBaseModel(
            String name, ShardingStrategy strategy, ProcessGroup group) {
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED);
            NDArray base = TestModels.logits(lm, ids, null);
            Lora.apply(lm, lora());
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, strategy, group, 1e-3f)) {
                check(
                        name + " " + strategy + " LoRA at init",
                        base,
                        trainer.evaluate(new NDList(ids)).head(),
                        0f);
                train(trainer, manager, 1);
                ShardingStats stats = trainer.getShardingStats();
                long shards = strategy.isSharded() ? group.getSize() : 1;
                // Gradients and AdamW's two moments cover this rank's share of the adapters only:
                // each of the units' trainable buffers (at most 3) pads by under one element.
                long adapterBytes = (Lora.count(lm).trainable() / shards + 3) * Float.BYTES;
                if (stats.gradientBytes() > adapterBytes
                        || stats.optimizerStateBytes() > 2 * adapterBytes) {
                    throw new AssertionError(
                            name + " " + strategy + ": state beyond the adapters: " + stats);
                }
            }
        }
    }

    /**
     * After training, the model merged one FSDP unit at a time and saved by rank 0 loads as a plain
     * checkpoint and computes what the adapted model computes, and what the model gathered whole
     * and merged at once computes; while it is merged, a rank holds one unit at a time.
     */
    private static void mergedEqualsAdaptedAfterTraining(String name, ProcessGroup group) {
        Path directory = null;
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            directory = Files.createTempDirectory("merged-by-unit");
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED + 1);
            NDArray base = TestModels.logits(lm, ids, null);
            Lora.apply(lm, lora());
            // The loss computes the frozen head's product itself; logits are read as usual.
            lm.setFusedLossHead(true);
            model.setBlock(lm);
            NDArray adapted;
            try (FsdpTrainer trainer =
                    newTrainer(model, ShardingStrategy.FULL_SHARD, group, 1e-2f)) {
                train(trainer, manager, 3);
                adapted = trainer.evaluate(new NDList(ids)).head();
                gathersOneUnitAtATime(name, trainer, lm);
                ShardedSave.merged(trainer, lm, directory);
                ShardedSave.adapters(trainer, lora(), directory.resolve("adapters"));
            } // closing gathers the trained adapters into the model
            if (TestModels.maxDiff(base, adapted) < 1e-3f) {
                throw new AssertionError(name + ": training did not change the adapted logits");
            }
            // Merging unit by unit changed copies only: the model still has its adapted weights.
            check(
                    name + " adapted after close",
                    adapted,
                    TestModels.logits(lm, ids, null),
                    TOLERANCE);
            Lora.merge(lm);
            NDArray mergedWhole = TestModels.logits(lm, ids, null);
            check(name + " merged", adapted, mergedWhole, 1e-4f);
            if (group.getRank() == 0) {
                // Loading is strict: the file holds exactly the plain model's names and shapes.
                CausalLM loaded = Models.load(directory, manager);
                NDArray mergedByUnit = TestModels.logits(loaded, ids, null);
                check(name + " merged unit by unit", adapted, mergedByUnit, 1e-4f);
                check(name + " merged unit by unit vs whole", mergedWhole, mergedByUnit, 0f);
                // The adapter files hold every rank's part of every adapter: a fresh base model
                // with them computes what the trained, adapted model computed.
                CausalLM fresh = TestModels.seeded(name, manager, SEED);
                Lora.load(fresh, directory.resolve("adapters"));
                check(
                        name + " adapters saved unit by unit",
                        adapted,
                        TestModels.logits(fresh, ids, null),
                        TOLERANCE);
            } else if (Files.exists(directory.resolve(SafetensorsCheckpoint.SINGLE_FILE))) {
                throw new AssertionError(name + ": a rank other than 0 wrote the merged model");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            deleteQuietly(directory);
        }
    }

    /** With {@code optGatherOnClose(false)}, closing the trainer gathers no parameter. */
    private static void closingWithoutGatheringLeavesNoFullParameters(
            String name, ProcessGroup group) {
        try (Model model = Model.newInstance(name, Device.cpu())) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            model.setBlock(lm);
            newTrainer(model, ShardingStrategy.FULL_SHARD, group, 1e-3f, null, false).close();
            StateDict.parameters(lm)
                    .forEach(
                            (parameterName, parameter) -> {
                                if (parameter.getArray().size() != 0) {
                                    throw new AssertionError(
                                            name + ": " + parameterName + " was gathered on close");
                                }
                            });
        }
    }

    /**
     * While a unit is visited, its parameters, and no others, hold their full arrays; every unit is
     * visited once, the root last.
     */
    private static void gathersOneUnitAtATime(String name, FsdpTrainer trainer, CausalLM lm)
            throws IOException {
        Map<String, Parameter> parameters = StateDict.parameters(lm);
        List<String> visited = new ArrayList<>();
        trainer.forEachUnitGathered(
                unit -> {
                    Set<Parameter> own = Collections.newSetFromMap(new IdentityHashMap<>());
                    own.addAll(unit.getParameters());
                    parameters.forEach(
                            (parameterName, parameter) -> {
                                boolean full =
                                        parameter
                                                .getArray()
                                                .getShape()
                                                .equals(parameter.getShape());
                                if (full != own.contains(parameter)) {
                                    throw new AssertionError(
                                            name
                                                    + ": while unit "
                                                    + unit.getName()
                                                    + " is gathered, "
                                                    + parameterName
                                                    + (full ? " is gathered too" : " is not"));
                                }
                            });
                    visited.add(unit.getName());
                });
        int layers = lm.getConfig().numLayers();
        if (visited.size() != layers + 1 || !visited.get(layers).equals("root")) {
            throw new AssertionError(
                    name + ": expected " + layers + " layers then the root, visited " + visited);
        }
    }

    private static LoraConfig lora() {
        return LoraConfig.builder()
                .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                .optRank(4)
                .optAlpha(8)
                .optDropout(0.1f)
                .build();
    }

    private static FsdpTrainer newTrainer(
            Model model, ShardingStrategy strategy, ProcessGroup group, float learningRate) {
        return newTrainer(model, strategy, group, learningRate, null);
    }

    private static FsdpTrainer newTrainer(
            Model model,
            ShardingStrategy strategy,
            ProcessGroup group,
            float learningRate,
            ParameterSource source) {
        return newTrainer(model, strategy, group, learningRate, source, true);
    }

    private static FsdpTrainer newTrainer(
            Model model,
            ShardingStrategy strategy,
            ProcessGroup group,
            float learningRate,
            ParameterSource source,
            boolean gatherOnClose) {
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optOptimizer(
                                Optimizer.adamW()
                                        .optLearningRateTracker(Tracker.fixed(learningRate))
                                        .build())
                        .optDevices(new Device[] {Device.cpu()});
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(strategy)
                        .optWrapPolicy(
                                WrapPolicy.byLayerClass(
                                        ((CausalLM) model.getBlock())
                                                .decoderLayerClass()
                                                .getSimpleName()))
                        .build();
        TrainerOptions options =
                TrainerOptions.builder()
                        .optInitialValues(source)
                        .optGatherOnClose(gatherOnClose)
                        .build();
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp, options);
    }

    /** A few steps on fixed random tokens, the same global batch on every rank. */
    private static void train(FsdpTrainer trainer, NDManager manager, int steps) {
        for (int step = 0; step < steps; step++) {
            try (NDManager scope = manager.newSubManager()) {
                NDArray tokens = TestModels.tokens(scope, 2, 13, SEED + 2);
                NDList inputs = new NDList(tokens.get(":, 0:12"));
                NDList labels = new NDList(tokens.get(":, 1:13"));
                try (GradientCollector collector = trainer.newGradientCollector()) {
                    NDList outputs = trainer.forward(inputs, labels);
                    collector.backward(trainer.getLoss().evaluate(labels, outputs));
                }
                trainer.step();
            }
        }
    }

    private static void check(String what, NDArray expected, NDArray actual, float tolerance) {
        float diff = TestModels.maxDiff(expected, actual);
        if (!(diff <= tolerance)) {
            throw new AssertionError(what + ": largest difference " + diff + " > " + tolerance);
        }
    }
}
