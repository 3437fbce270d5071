package ai.djl.fsdp.zoo.sharded;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.util.Pair;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * On every rank of a job: a Llama whose float32 size is six times its largest FSDP unit, its base
 * in bfloat16 and LoRA adapters trained one step, saved merged (bfloat16, split into files of a
 * third of its size at most) and as a sharded checkpoint. During each save this rank's resident
 * memory may grow by at most {@link #BOUND} times the largest unit's float32 bytes: saves go unit
 * by unit.
 *
 * <p>The resident set is read from {@code /proc/self/status} every millisecond on a thread of its
 * own during the save, against the value just before it (after a garbage collection). What is
 * measured is the native memory of the tensors; the rank JVMs run with a small Java heap ({@link
 * SaveMemoryTest}) so that the heap's first touch of fresh pages does not pass for it.
 */
final class SaveMemoryChecks {

    /** The bound on a save's growth, in units of the largest unit's full float32 bytes. */
    static final double BOUND = 1.5;

    private static final int LAYERS = 6;
    private static final int WIDTH = 1024;
    private static final int INTERMEDIATE = 3072;
    private static final int VOCAB = 512;
    private static final int SEED = 5;
    private static final Pattern LAYER = Pattern.compile("layers\\.\\d+\\.");

    private SaveMemoryChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args the directory the ranks share
     */
    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[0]);
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment());
                Model model = Model.newInstance("save-memory", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = newBase(model);
            long unitBytes = largestLayerBytes(lm);
            long modelBytes = floatBytes(lm);
            addAdapters(model, lm);
            try (FsdpTrainer trainer = newTrainer(model, group)) {
                step(trainer, manager);
                // A first save warms up what is allocated once per process (the math library's
                // buffers, the allocator's arenas, compiled code); the second is measured, and
                // would grow with every unit if a save kept what it gathered.
                ShardedSave.merged(
                        trainer, lm, directory.resolve("warm-up"), Dtype.BF16, modelBytes);
                // The lower of two saves: a transient neighbour (the JIT compiling, say) lifts
                // one reading, while a save that kept what it gathered would lift both.
                long merged = Long.MAX_VALUE;
                for (int round = 0; round < 2; round++) {
                    Path target = directory.resolve("merged-" + round);
                    merged =
                            Math.min(
                                    merged,
                                    growthDuring(
                                            () ->
                                                    ShardedSave.merged(
                                                            trainer,
                                                            lm,
                                                            target,
                                                            Dtype.BF16,
                                                            modelBytes / 2 / 3)));
                }
                long checkpoint =
                        growthDuring(() -> trainer.saveCheckpoint(directory.resolve("ckpt")));
                System.out.printf(
                        "rank %d: model %.1f MB float32, largest unit %.1f MB; growth during the"
                                + " merged save %.1f MB (%.2fx), the checkpoint %.1f MB (%.2fx)%n",
                        group.getRank(),
                        modelBytes / 1e6,
                        unitBytes / 1e6,
                        merged / 1e6,
                        (double) merged / unitBytes,
                        checkpoint / 1e6,
                        (double) checkpoint / unitBytes);
                check("merged save", merged, unitBytes);
                check("sharded checkpoint", checkpoint, unitBytes);
            }
            if (group.getRank() == 0) {
                checkMergedFiles(directory.resolve("merged-1"));
            }
            group.barrier();
        }
        System.out.println("checks passed");
    }

    /** The model of these checks, its parameters initialized, without adapters. */
    static CausalLM newBase(Model model) {
        JsonObject json = LlamaConfig.of(LAYERS, WIDTH, 16, 16, INTERMEDIATE, 64).toJson();
        json.addProperty("vocab_size", VOCAB);
        Engine.getEngine("PyTorch").setRandomSeed(SEED);
        return Models.create(ModelFamilies.parse(json), model.getNDManager());
    }

    /** Adds LoRA adapters on every linear layer and sets the model as {@code model}'s block. */
    static void addAdapters(Model model, CausalLM lm) {
        Lora.apply(
                lm,
                LoraConfig.builder()
                        .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                        .optRank(4)
                        .build());
        model.setBlock(lm);
    }

    static void check(String what, long growth, long unitBytes) {
        if (growth > BOUND * unitBytes) {
            throw new AssertionError(
                    what
                            + " grew the resident set by "
                            + growth
                            + " bytes, more than "
                            + BOUND
                            + " x the largest unit's "
                            + unitBytes);
        }
    }

    /** The merged model: several bfloat16 files and Hugging Face's index. */
    private static void checkMergedFiles(Path merged) throws IOException {
        long files =
                list(merged).stream()
                        .filter(f -> f.matches("model-\\d{5}-of-\\d{5}\\.safetensors"))
                        .count();
        if (!Files.exists(merged.resolve(SafetensorsCheckpoint.INDEX_FILE)) || files < 3) {
            throw new AssertionError("the merged model is not split: " + list(merged));
        }
        try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(merged)) {
            for (String name : checkpoint.names()) {
                if (checkpoint.info(name).dtype() != Dtype.BF16) {
                    throw new AssertionError(name + " is " + checkpoint.info(name).dtype());
                }
            }
        }
    }

    private static List<String> list(Path directory) throws IOException {
        try (var files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** The largest decoder layer's float32 bytes (every layer is a unit; the root is smaller). */
    static long largestLayerBytes(CausalLM lm) {
        Map<String, Long> layers = new HashMap<>();
        StateDict.parameters(lm)
                .forEach(
                        (name, parameter) -> {
                            Matcher m = LAYER.matcher(name);
                            if (m.find()) {
                                layers.merge(
                                        m.group(),
                                        parameter.getArray().size() * Float.BYTES,
                                        Long::sum);
                            }
                        });
        return layers.values().stream().mapToLong(Long::longValue).max().orElseThrow();
    }

    private static long floatBytes(CausalLM lm) {
        long bytes = 0;
        for (Pair<String, Parameter> p : lm.getParameters()) {
            bytes += p.getValue().getArray().size() * Float.BYTES;
        }
        return bytes;
    }

    /** What is measured: a save, or a load. */
    @FunctionalInterface
    interface Operation {
        void run() throws IOException;
    }

    /** The largest growth of the resident set while {@code save} runs, from just before it. */
    static long growthDuring(Operation save) throws Exception {
        System.gc();
        ResidentMemory.Peak peak = ResidentMemory.watch();
        Thread.sleep(200);
        long before = ResidentMemory.current();
        try {
            save.run();
        } finally {
            peak.stop();
        }
        return Math.max(0, peak.get() - before);
    }

    static FsdpTrainer newTrainer(Model model, ProcessGroup group) {
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                        .optMixedPrecision(MixedPrecision.BF16)
                        .optFrozenInComputePrecision(true)
                        .optWrapPolicy(TestModels.decoderLayers((CausalLM) model.getBlock()))
                        .build();
        return FullyShardedDataParallel.newTrainer(
                model, TestModels.trainingConfig(), group, fsdp, TrainerOptions.builder().build());
    }

    static void step(FsdpTrainer trainer, NDManager manager) {
        try (NDManager scope = manager.newSubManager()) {
            long[] ids = new Random(SEED).longs(2 * 17, 0, VOCAB).toArray();
            NDArray tokens = scope.create(ids).reshape(2, 17);
            NDList inputs = new NDList(tokens.get(":, 0:16"));
            NDList labels = new NDList(tokens.get(":, 1:17"));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDArray loss = trainer.getLoss().evaluate(labels, trainer.forward(inputs, labels));
                collector.backward(loss);
            }
            trainer.step();
        }
    }
}
