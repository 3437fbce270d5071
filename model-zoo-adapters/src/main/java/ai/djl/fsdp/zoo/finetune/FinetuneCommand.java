package ai.djl.fsdp.zoo.finetune;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.wrap.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.Models;
import ai.djl.fsdp.zoo.hf.CheckpointShardSource;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bin/fsdp finetune}: trains a causal language model (GPT-2, Llama) on a plain-text file,
 * fully or with LoRA adapters, with Hugging Face's flag names. Alone it is a job of one rank; under
 * {@code bin/fsdp launch --nproc-per-node N -- finetune ...} the ranks train together with FSDP,
 * each on its slice of every global batch.
 */
@Command(
        name = "finetune",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description =
                "Fine-tune (or train from scratch) a causal language model on a text file, with"
                        + " FSDP across the ranks of the job.")
public final class FinetuneCommand implements Subcommand {

    /** The subdirectory of a LoRA run's output that holds the merged model. */
    public static final String MERGED = "merged";

    @Spec private CommandSpec spec;

    @Option(
            names = "--model_name_or_path",
            defaultValue = "gpt2-tiny",
            description =
                    "Hugging Face checkpoint directory (config.json, *.safetensors; config.json"
                        + " alone trains fresh weights), or a built-in architecture trained from"
                        + " scratch: gpt2-tiny, llama-tiny (default ${DEFAULT-VALUE}).")
    private String modelNameOrPath;

    @Option(
            names = "--tokenizer_name",
            description = "tokenizer.json (default: the one in --model_name_or_path).")
    private Path tokenizerName;

    @Option(names = "--dataset", required = true, description = "A UTF-8 plain-text file.")
    private Path dataset;

    @Option(
            names = "--max_seq_len",
            defaultValue = "128",
            description = "Tokens per training sequence (default ${DEFAULT-VALUE}).")
    private int maxSeqLen;

    @Option(
            names = "--per_device_train_batch_size",
            defaultValue = "4",
            description = "Sequences per rank and step (default ${DEFAULT-VALUE}).")
    private int perDeviceTrainBatchSize;

    @Option(
            names = "--max_steps",
            defaultValue = "30",
            description = "Optimizer steps (default ${DEFAULT-VALUE}).")
    private int maxSteps;

    @Option(
            names = "--learning_rate",
            defaultValue = "5e-4",
            description = "Peak learning rate of AdamW (default ${DEFAULT-VALUE}).")
    private float learningRate;

    @Option(
            names = "--warmup_steps",
            defaultValue = "0",
            description =
                    "Steps of linear warm-up from 0 before the cosine decay to 0 (default"
                            + " ${DEFAULT-VALUE}).")
    private int warmupSteps;

    @Option(
            names = "--weight_decay",
            defaultValue = "0",
            description = "AdamW's decoupled weight decay (default ${DEFAULT-VALUE}).")
    private float weightDecay;

    @Option(
            names = "--max_grad_norm",
            defaultValue = "1.0",
            description =
                    "Clip the global gradient norm to this; 0 turns clipping off (default"
                            + " ${DEFAULT-VALUE}).")
    private float maxGradNorm;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Seed of the initial weights and dropout (default ${DEFAULT-VALUE}).")
    private int seed;

    @Option(
            names = "--use_peft_lora",
            description = "Train LoRA adapters on a frozen base model instead of every weight.")
    private boolean usePeftLora;

    @Option(
            names = "--lora_r",
            defaultValue = "8",
            description = "LoRA rank (default ${DEFAULT-VALUE}).")
    private int loraR;

    @Option(
            names = "--lora_alpha",
            defaultValue = "16",
            description = "LoRA scaling numerator (default ${DEFAULT-VALUE}).")
    private float loraAlpha;

    @Option(
            names = "--lora_dropout",
            defaultValue = "0.05",
            description = "Dropout on the adapters' input (default ${DEFAULT-VALUE}).")
    private float loraDropout;

    @Option(
            names = "--lora_target_modules",
            split = ",",
            defaultValue = LoraConfig.ALL_LINEAR,
            description =
                    "Modules to adapt, comma-separated (c_attn,c_proj or q_proj,v_proj), or"
                            + " all-linear (default ${DEFAULT-VALUE}).")
    private List<String> loraTargetModules;

    @Option(
            names = "--sharding_strategy",
            defaultValue = "FULL_SHARD",
            description = "FULL_SHARD, SHARD_GRAD_OP or NO_SHARD (default ${DEFAULT-VALUE}).")
    private ShardingStrategy shardingStrategy;

    @Option(
            names = "--fsdp_transformer_layer_cls_to_wrap",
            split = ",",
            description =
                    "Block classes that become FSDP units, comma-separated (default: the model's"
                            + " decoder layer, GPT2Block or LlamaDecoderLayer).")
    private List<String> layerClassesToWrap;

    @Option(
            names = "--output_dir",
            required = true,
            description =
                    "Where the trained model goes (replaced as a whole when complete); with LoRA"
                            + " the adapters, and the merged model in merged/.")
    private Path outputDir;

    /** The learning-rate schedule, kept to print each step's rate. */
    private Tracker schedule;

    @Override
    public Integer call() throws IOException, TranslateException {
        Path checkpoint = Path.of(modelNameOrPath);
        boolean fromCheckpoint = Files.isDirectory(checkpoint);
        if (!fromCheckpoint && !Models.isBuiltin(modelNameOrPath)) {
            throw new IllegalArgumentException(
                    "--model_name_or_path "
                            + modelNameOrPath
                            + " is neither a checkpoint directory (config.json, *.safetensors) nor"
                            + " a built-in model "
                            + Models.builtinNames());
        }
        if (fromCheckpoint && !Files.isRegularFile(checkpoint.resolve(ConfigJson.FILE))) {
            throw new IllegalArgumentException(
                    "--model_name_or_path " + modelNameOrPath + " has no " + ConfigJson.FILE);
        }
        Path tokenizerPath = tokenizerPath(checkpoint, fromCheckpoint);
        validate();
        DistributedEnv env = DistributedEnv.fromEnvironment();
        Engine.getInstance().setRandomSeed(seed);
        try (ProcessGroup group = ProcessGroups.init(env);
                HuggingFaceTokenizer tokenizer = Tokenizers.load(tokenizerPath);
                Model model = Model.newInstance("finetune", Device.cpu())) {
            ModelConfig architecture =
                    fromCheckpoint ? ConfigJson.read(checkpoint) : Models.builtin(modelNameOrPath);
            if (maxSeqLen > architecture.maxPositions()) {
                throw new IllegalArgumentException(
                        "--max_seq_len "
                                + maxSeqLen
                                + " exceeds the model's "
                                + architecture.maxPositions()
                                + " positions");
            }
            int globalBatch = perDeviceTrainBatchSize * group.size();
            TokenBlocks blocks =
                    TokenBlocks.read(
                            tokenizer,
                            dataset,
                            maxSeqLen,
                            (long) maxSteps * globalBatch,
                            architecture.vocabSize());
            ArrayDataset data = blocks.toDataset(model.getNDManager(), globalBatch);
            // Weights are not loaded here: FSDP reads each rank's shards straight from the files.
            boolean hasWeights = fromCheckpoint && hasWeights(checkpoint);
            CausalLM lm =
                    hasWeights
                            ? Models.allocate(architecture, model.getNDManager())
                            : Models.create(architecture, model.getNDManager());
            if (fromCheckpoint && !hasWeights && group.rank() == 0) {
                print(checkpoint + " holds no weights: training from fresh weights");
            }
            model.setBlock(lm);
            LoraConfig lora;
            FsdpTrainer trainer;
            try (CheckpointShardSource source =
                    hasWeights ? HfCheckpoint.shardSource(lm, checkpoint) : null) {
                // Adapters come after the source has matched the base parameters to the files.
                lora = usePeftLora ? applyLora(lm, group.rank()) : null;
                trainer =
                        FullyShardedDataParallel.newTrainer(
                                model,
                                trainingConfig(),
                                group,
                                fsdpConfig(lm),
                                trainerOptions(source));
            }
            try (trainer) {
                train(trainer, data, group, (long) globalBatch * maxSeqLen);
                report(trainer.getShardingStats(), group.rank());
                save(trainer, lm, lora, tokenizerPath);
            } // the model was saved one unit at a time: closing gathers nothing
            group.barrier();
        }
        return 0;
    }

    private static boolean hasWeights(Path checkpoint) {
        return Files.exists(checkpoint.resolve(SafetensorsCheckpoint.SINGLE_FILE))
                || Files.exists(checkpoint.resolve(SafetensorsCheckpoint.INDEX_FILE));
    }

    private Path tokenizerPath(Path checkpoint, boolean fromCheckpoint) {
        if (tokenizerName != null) {
            requireFile(tokenizerName, "--tokenizer_name");
            return tokenizerName;
        }
        if (!fromCheckpoint) {
            throw new IllegalArgumentException(
                    "--model_name_or_path "
                            + modelNameOrPath
                            + " is a built-in model without a tokenizer: pass --tokenizer_name"
                            + " (a tokenizer.json, e.g. GPT-2's)");
        }
        Path inCheckpoint = checkpoint.resolve(Tokenizers.FILE);
        requireFile(inCheckpoint, "--tokenizer_name (default: the checkpoint's)");
        return inCheckpoint;
    }

    private void validate() {
        requireFile(dataset, "--dataset");
        requirePositive(maxSeqLen, "--max_seq_len");
        requirePositive(perDeviceTrainBatchSize, "--per_device_train_batch_size");
        requirePositive(maxSteps, "--max_steps");
        if (!(learningRate > 0)) {
            throw new IllegalArgumentException(
                    "--learning_rate must be positive, got " + learningRate);
        }
        if (warmupSteps < 0 || warmupSteps >= maxSteps) {
            throw new IllegalArgumentException(
                    "--warmup_steps must be in [0, --max_steps), got " + warmupSteps);
        }
        if (maxGradNorm < 0) {
            throw new IllegalArgumentException(
                    "--max_grad_norm must be positive, or 0 for no clipping; got " + maxGradNorm);
        }
    }

    private static void requireFile(Path path, String flag) {
        if (!Files.isRegularFile(path)) {
            throw new IllegalArgumentException(flag + " " + path + " is not a readable file");
        }
    }

    private static void requirePositive(int value, String flag) {
        if (value <= 0) {
            throw new IllegalArgumentException(flag + " must be positive, got " + value);
        }
    }

    private LoraConfig applyLora(CausalLM lm, int rank) {
        LoraConfig lora =
                LoraConfig.builder()
                        .setTargetModules(loraTargetModules)
                        .optRank(loraR)
                        .optAlpha(loraAlpha)
                        .optDropout(loraDropout)
                        .build();
        Lora.apply(lm, lora);
        if (rank == 0) {
            print(Lora.count(lm).toString());
        }
        return lora;
    }

    /**
     * AdamW with a cosine decay from the peak learning rate to 0 at {@code max_steps}, after an
     * optional linear warm-up (DJL's trackers count optimizer updates from 1).
     */
    private DefaultTrainingConfig trainingConfig() {
        schedule = learningRateSchedule();
        Optimizer adamW =
                Optimizer.adamW()
                        .optLearningRateTracker(schedule)
                        .optWeightDecays(weightDecay)
                        .build();
        return new DefaultTrainingConfig(new CausalLmLoss())
                .optOptimizer(adamW)
                .optDevices(new Device[] {Device.cpu()});
    }

    private Tracker learningRateSchedule() {
        Tracker cosine =
                Tracker.cosine()
                        .setBaseValue(learningRate)
                        .optFinalValue(0)
                        .setMaxUpdates(maxSteps - warmupSteps)
                        .build();
        return warmupSteps == 0
                ? cosine
                : Tracker.warmUp()
                        .setMainTracker(cosine)
                        .optWarmUpSteps(warmupSteps)
                        .optWarmUpBeginValue(0)
                        .build();
    }

    private FsdpConfig fsdpConfig(CausalLM lm) {
        List<String> layers =
                layerClassesToWrap != null
                        ? layerClassesToWrap
                        : List.of(lm.decoderLayerClass().getSimpleName());
        return FsdpConfig.builder()
                .optShardingStrategy(shardingStrategy)
                .optWrapPolicy(WrapPolicy.byLayerClass(layers))
                .build();
    }

    private TrainerOptions trainerOptions(ParameterSource source) {
        TrainerOptions.Builder builder =
                TrainerOptions.builder()
                        .optInitialValues(source)
                        // The model is saved one unit at a time before the trainer closes.
                        .optGatherOnClose(false);
        if (maxGradNorm > 0) {
            builder.optMaxGradNorm(maxGradNorm);
        }
        return builder.build();
    }

    private void train(FsdpTrainer trainer, ArrayDataset data, ProcessGroup group, long stepTokens)
            throws IOException, TranslateException {
        int step = 0;
        while (step < maxSteps) {
            for (Batch batch : trainer.iterateDataset(data)) {
                long begin = System.nanoTime();
                float loss;
                try (batch;
                        GradientCollector collector = trainer.newGradientCollector()) {
                    NDList predictions = trainer.forward(batch.getData(), batch.getLabels());
                    NDArray value = trainer.getLoss().evaluate(batch.getLabels(), predictions);
                    collector.backward(value);
                    loss = meanOverRanks(value, group);
                }
                trainer.step();
                step++;
                double seconds = (System.nanoTime() - begin) / 1e9;
                if (group.rank() == 0) {
                    print(
                            String.format(
                                    Locale.ROOT,
                                    "step=%d loss=%.4f lr=%.3e%s tokens_per_s=%.0f",
                                    step,
                                    loss,
                                    schedule.getNewValue(step),
                                    gradNorm(trainer),
                                    stepTokens / seconds));
                }
                if (step == maxSteps) {
                    return;
                }
            }
        }
    }

    /** The measured gradient norm as a log field, or nothing when it was not measured. */
    private static String gradNorm(FsdpTrainer trainer) {
        OptionalDouble norm = trainer.getLastGradNorm();
        return norm.isPresent()
                ? String.format(Locale.ROOT, " grad_norm=%.3f", norm.getAsDouble())
                : "";
    }

    /** Every rank's loss is its own slice's: the printed loss is their mean, the global batch's. */
    private static float meanOverRanks(NDArray loss, ProcessGroup group) {
        NDArray copy = loss.stopGradient().reshape(1);
        group.allReduce(copy, ReduceOp.AVG);
        return copy.getFloat();
    }

    private void report(ShardingStats stats, int rank) {
        print(
                String.format(
                        Locale.ROOT,
                        "rank=%d model_state_bytes=%d parameter_bytes=%d gradient_bytes=%d"
                                + " optimizer_state_bytes=%d unsharded_parameter_bytes=%d"
                                + " peak_rss_mb=%.1f",
                        rank,
                        stats.modelStateBytes(),
                        stats.parameterBytes(),
                        stats.gradientBytes(),
                        stats.optimizerStateBytes(),
                        stats.unshardedParameterBytes(),
                        PeakMemory.residentBytes() / 1e6));
    }

    /**
     * Saves the trained model (LoRA: the adapters, and the merged model in {@code merged/}) one
     * FSDP unit at a time, so no rank ever holds the whole model. Every rank takes part in the
     * gathers; rank 0 writes, into a staging directory that replaces the output at the end.
     */
    private void save(FsdpTrainer trainer, CausalLM lm, LoraConfig lora, Path tokenizerPath)
            throws IOException {
        boolean writes = trainer.getRank() == 0;
        OutputDirectory.Contents contents =
                directory -> {
                    Path model = lora == null ? directory : directory.resolve(MERGED);
                    if (lora != null) {
                        HfCheckpoint.saveAdapters(trainer, lora, directory);
                    }
                    HfCheckpoint.saveMerged(trainer, lm, model);
                    if (writes) {
                        Files.copy(tokenizerPath, directory.resolve(Tokenizers.FILE));
                        if (lora != null) {
                            Files.copy(tokenizerPath, model.resolve(Tokenizers.FILE));
                        }
                    }
                };
        if (writes) {
            OutputDirectory.replace(outputDir, contents);
            print(
                    "saved "
                            + (lora == null ? "the model" : "the adapters and merged/")
                            + " to "
                            + outputDir);
        } else {
            contents.writeTo(outputDir); // takes part in the gathers; writes nothing
        }
    }

    private void print(String line) {
        PrintWriter out = spec.commandLine().getOut();
        out.println(line);
        out.flush();
    }
}
