package ai.djl.fsdp.zoo.finetune;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.finetune.args.ArgumentChecks;
import ai.djl.fsdp.zoo.finetune.args.CheckpointArguments;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import ai.djl.fsdp.zoo.finetune.args.HubCompatibility;
import ai.djl.fsdp.zoo.finetune.args.ListenerArguments;
import ai.djl.fsdp.zoo.finetune.args.QuantizationArguments;
import ai.djl.fsdp.zoo.finetune.config.AccelerateDefaults;
import ai.djl.fsdp.zoo.finetune.output.OutputDirectory;
import ai.djl.fsdp.zoo.finetune.report.CurvePlot;
import ai.djl.fsdp.zoo.finetune.report.ExactMatch;
import ai.djl.fsdp.zoo.finetune.report.MetricsLog;
import ai.djl.fsdp.zoo.finetune.report.Outcome;
import ai.djl.fsdp.zoo.finetune.report.RunReport;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import ai.djl.nn.Parameter;
import ai.djl.training.listener.TrainingListener;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code bin/fsdp finetune}: trains a causal language model (GPT-2, Llama) on text, JSON lines or
 * conversations, or an encoder-decoder model (T5) on source-target pairs, fully or with LoRA
 * adapters, with Hugging Face's and TRL's flag names. Alone it is a job of one rank; under {@code
 * bin/fsdp launch --nproc-per-node N -- finetune ...} the ranks train together with FSDP, each on
 * its part of every epoch. The flags are in {@link FinetuneArguments}, {@link FsdpArguments},
 * {@link QuantizationArguments} and {@link HubCompatibility}; the run is built by {@link
 * FinetuneRecipe} and trained by {@link TrainingLoop}, whose steps the trainer's listeners ({@link
 * FinetuneListeners}, with the user's {@code --listeners}) log, evaluate and checkpoint; {@link
 * FinetuneOutput} saves the model and {@link RunReport} writes what it produced.
 */
@Command(
        name = "finetune",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        defaultValueProvider = AccelerateDefaults.class,
        description =
                "Fine-tune (or train from scratch) a causal language model, or a seq2seq one"
                        + " (T5), with FSDP across the ranks of the job.")
public final class FinetuneCommand implements Subcommand {

    @Spec private CommandSpec spec;
    @Mixin private FinetuneArguments args;
    @Mixin private FsdpArguments fsdp;
    @Mixin private HubCompatibility hub;
    @Mixin private QuantizationArguments quantization;
    @Mixin private CheckpointArguments checkpoints;
    @Mixin private ListenerArguments listeners;

    private final Set<String> notes = new LinkedHashSet<>();
    private boolean rankZero = true;
    private boolean ready;
    private Dtype saveDtype;
    private QuantizationConfig quantized;
    private long maxShardBytes;

    @Override
    public Integer call() throws Exception {
        DistributedEnv env = DistributedEnv.fromEnvironment();
        if (fsdp.configFile != null) {
            return withConfigFile(env.getWorldSize());
        }
        // As Hugging Face's log_level, the main process's: the other ranks stay quiet.
        RunReport.setLogLevel(env.getRank() == 0 ? args.logLevel : "passive");
        Path checkpoint = Path.of(args.modelNameOrPath);
        boolean fromCheckpoint = Files.isDirectory(checkpoint);
        validate(checkpoint, fromCheckpoint);
        saveDtype = SaveFormat.dtype(args.saveDtype, fromCheckpoint ? checkpoint : null);
        maxShardBytes = SaveFormat.bytes(args.maxShardSize);
        this.checkpoints.check();
        List<TrainingListener> userListeners = listeners.newListeners();
        Engine.getInstance().setRandomSeed(args.seed);
        try (ProcessGroup group = ProcessGroups.init(env)) {
            rankZero = group.getRank() == 0;
            if (rankZero) {
                // Before training, once the ranks are linked: if it refuses, rank 0's exit ends
                // the others at once (launched by any scheduler), not after the rendezvous timeout.
                OutputDirectory.check(args.outputDir, args.overwriteOutputDir);
            }
            List<String> pending = new ArrayList<>(notes);
            notes.clear();
            ready = true;
            pending.forEach(this::note);
            if (spec.defaultValueProvider() instanceof AccelerateDefaults defaults) {
                defaults.notes().forEach(this::note);
            }
            hub.preferGiven(spec.commandLine().getParseResult());
            hub.check(this::note);
            fsdp.check(this::note);
            fsdp.mixedPrecision = hub.mixedPrecision();
            if (quantized != null && quantized.getComputeType() != fsdp.mixedPrecision.param()) {
                note(
                        "--bnb_4bit_compute_dtype "
                                + quantized.getComputeType().name().toLowerCase(Locale.ROOT)
                                + ": the 4-bit layers compute in the run's type, "
                                + fsdp.mixedPrecision.param().name().toLowerCase(Locale.ROOT)
                                + " (--bf16 or --fp16 set it)");
            }
            FinetuneRecipe.ModelSource source = modelSource(checkpoint, fromCheckpoint);
            try (FinetuneRecipe recipe =
                            FinetuneRecipe.prepare(args, fsdp, group, source, this::note);
                    Model model = Model.newInstance("finetune", group.getDevice())) {
                train(
                        recipe,
                        model,
                        fromCheckpoint && SafetensorsCheckpoint.existsIn(checkpoint),
                        checkpoint,
                        new FinetuneListeners(recipe, checkpoints, userListeners, this::print));
            }
            group.barrier();
        }
        return 0;
    }

    private void train(
            FinetuneRecipe recipe,
            Model model,
            boolean hasWeights,
            Path checkpoint,
            FinetuneListeners runListeners)
            throws IOException {
        // Not initialized here: ShardedStart (bench train's path too) has the trainer initialize
        // the model one unit at a time on the rank's device, keeping only this rank's shards, read
        // straight from the checkpoint's files when there is one. No rank holds the whole model.
        PretrainedModel lm =
                hasWeights
                        ? Models.forAnyCheckpoint(recipe.architecture)
                        : recipe.architecture.newModel();
        LoraConfig lora = args.usePeftLora ? loraConfig(recipe, lm) : null;
        FsdpTrainer trainer =
                ShardedStart.initialize(
                                model,
                                lm,
                                hasWeights ? checkpoint : null,
                                recipe.resize,
                                quantized,
                                lora,
                                null,
                                (m, block, source) ->
                                        recipe.newTrainer(m, block, source, runListeners.all()))
                        .trainer();
        if (lora != null) {
            print(Lora.count(lm).toString());
        }
        Path resumeFrom = checkpoints.resumeDirectory(args.outputDir);
        try (trainer;
                RunReport report =
                        new RunReport(
                                rankZero, args.outputDir, args.overwriteOutputDir, resumeFrom)) {
            print(recipe.describe(lm, lora != null, report.getMetricsFile()));
            TrainingLoop loop = new TrainingLoop(recipe, trainer, this::print);
            Path resumed = loop.resume(resumeFrom);
            try (MetricsLog metrics = report.openMetrics(resumed, loop.getResumedSteps())) {
                runListeners.getLog().open(metrics);
                ExactMatch before = exactMatch(recipe, trainer, "before training");
                if (loop.getResumedSteps() == 0) {
                    runListeners.evaluateBeforeTraining(trainer);
                }
                loop.run();
                Outcome outcome = runListeners.getOutcome();
                ExactMatch after = exactMatch(recipe, trainer, "after training");
                long[] peaks = RunReport.peakMemoryPerRank(trainer, recipe.group);
                SentBytes sent = RunReport.sentPerStep(trainer, recipe.group);
                if (rankZero && CurvePlot.isAvailable()) {
                    CurvePlot.write(metrics.getRows(), report.plotFile());
                } else if (rankZero) {
                    note("no java.desktop in this Java runtime: " + CurvePlot.FILE + " not drawn");
                }
                String summary = report.summary(outcome, before, after, peaks, sent);
                new FinetuneOutput(
                                args,
                                rankZero,
                                saveDtype,
                                maxShardBytes,
                                quantized == null
                                        ? null
                                        : quantized.withComputeType(fsdp.mixedPrecision.param()),
                                this::print)
                        .save(recipe, trainer, lm, lora, report);
                print(summary);
            }
        } // the model was saved one unit at a time: closing gathers nothing
    }

    private ExactMatch exactMatch(FinetuneRecipe recipe, FsdpTrainer trainer, String when) {
        if (!(recipe.chat || recipe.seq2seq)
                || args.exactMatchSamples <= 0
                || recipe.eval == null) {
            return null;
        }
        ExactMatch match =
                new Evaluation(trainer, recipe.group)
                        .heldOut(recipe, args.exactMatchSamples, args.exactMatchBatchSize());
        if (match.total() == 0) {
            print(
                    "exact_match "
                            + when
                            + ": no eval conversation ends with a text reply to a text question"
                            + " without tools; nothing asked");
            return null;
        }
        print(RunReport.describe(match, when));
        return match;
    }

    /**
     * Runs with the defaults Accelerate's file stands for: the variables the launcher would set for
     * it, read by the same {@link AccelerateDefaults} (the command line's flags still win).
     */
    private int withConfigFile(int worldSize) throws Exception {
        AccelerateDefaults defaults =
                AccelerateDefaults.ofFile(fsdp.configFile, System.getenv(), worldSize);
        List<String> given = spec.commandLine().getParseResult().originalArgs();
        // Under bin/fsdp the original arguments start with the parent's: keep this command's.
        given = given.subList(given.indexOf(spec.name()) + 1, given.size());
        List<String> arguments = new ArrayList<>();
        for (int i = 0; i < given.size(); i++) {
            String arg = given.get(i);
            if (arg.equals("--config_file")) {
                i++;
            } else if (!arg.startsWith("--config_file=")) {
                arguments.add(arg);
            }
        }
        FinetuneCommand command = new FinetuneCommand();
        CommandLine line = new CommandLine(command);
        line.setDefaultValueProvider(defaults);
        line.setOut(spec.commandLine().getOut());
        line.parseArgs(arguments.toArray(new String[0]));
        return command.call();
    }

    private void validate(Path checkpoint, boolean fromCheckpoint) throws IOException {
        if (!fromCheckpoint && !Models.isBuiltin(args.modelNameOrPath)) {
            throw new IllegalArgumentException(
                    "--model_name_or_path "
                            + args.modelNameOrPath
                            + " is neither a checkpoint directory (config.json, *.safetensors) nor"
                            + " a built-in model "
                            + Models.builtinNames());
        }
        if (fromCheckpoint && !Files.isRegularFile(checkpoint.resolve(ConfigJson.FILE))) {
            throw new IllegalArgumentException(
                    "--model_name_or_path " + args.modelNameOrPath + " has no " + ConfigJson.FILE);
        }
        quantized = quantization.resolve();
        QuantizationConfig stored =
                fromCheckpoint
                        ? QuantizationConfig.read(checkpoint.resolve(ConfigJson.FILE))
                        : null;
        if (stored != null) {
            // As transformers does: a pre-quantized checkpoint loads as it was quantized.
            if (quantized != null && !quantized.describe().equals(stored.describe())) {
                note(
                        "--use_4bit_quantization's settings ("
                                + quantized.describe()
                                + ") give way to the checkpoint's quantization_config ("
                                + stored.describe()
                                + "): its weights are stored quantized");
            }
            quantized = stored;
        }
        if (quantized != null && !args.usePeftLora) {
            throw new IllegalArgumentException(
                    (stored == null
                                    ? "--use_4bit_quantization True freezes a 4-bit base"
                                    : "--model_name_or_path holds a 4-bit base ("
                                            + stored.describe()
                                            + ")")
                            + ": it trains only with --use_peft_lora True");
        }
        if (args.saveBaseModel && !args.usePeftLora) {
            throw new IllegalArgumentException(
                    "--save_base_model saves the base under LoRA adapters: it needs"
                            + " --use_peft_lora True (without adapters the saved model is the"
                            + " whole model)");
        }
        if (!args.saveMergedModel) {
            checkAdaptersAlone(checkpoint, fromCheckpoint, stored);
        }

        ArgumentChecks.check(args);
    }

    private FinetuneRecipe.ModelSource modelSource(Path checkpoint, boolean fromCheckpoint) {
        Path tokenizer = null;
        if (args.tokenizerName != null && !"byte-level".equals(args.tokenizerName)) {
            tokenizer = Path.of(args.tokenizerName);
        } else if (args.tokenizerName == null && fromCheckpoint) {
            tokenizer = checkpoint.resolve(ai.djl.fsdp.zoo.hf.Tokenizers.FILE);
        }
        if (tokenizer != null && !Files.isRegularFile(tokenizer)) {
            throw new IllegalArgumentException(
                    "--tokenizer_name "
                            + tokenizer
                            + " is not a readable file: pass a tokenizer.json, or byte-level");
        }
        Path file = tokenizer;
        return new FinetuneRecipe.ModelSource() {
            @Override
            public Path tokenizer() {
                return file;
            }

            @Override
            public boolean hasWeights() {
                return fromCheckpoint && SafetensorsCheckpoint.existsIn(checkpoint);
            }

            @Override
            public ModelConfig stored() throws IOException {
                return fromCheckpoint
                        ? ModelFamilies.read(checkpoint)
                        : Models.builtin(args.modelNameOrPath);
            }

            @Override
            public ModelConfig architecture(int vocab, long endOfText) throws IOException {
                return fromCheckpoint
                        ? ModelFamilies.read(checkpoint)
                        : FinetuneRecipe.builtin(args.modelNameOrPath, vocab, endOfText);
            }
        };
    }

    /**
     * The adapters' configuration; where the vocabulary grew, the token embedding and an untied
     * head train whole beside the adapters and are saved with them (PEFT's {@code
     * modules_to_save}), so the new tokens' rows are learnt.
     */
    private LoraConfig loraConfig(FinetuneRecipe recipe, PretrainedModel lm) {
        List<String> vocabularyModules = new ArrayList<>();
        if (recipe.resize != null) {
            List<Parameter> rows = lm.vocabularyParameters();
            StateDict.modules(lm)
                    .forEach(
                            (path, block) -> {
                                if (block.getDirectParameters().values().stream()
                                        .anyMatch(rows::contains)) {
                                    vocabularyModules.add(
                                            path.substring(path.lastIndexOf('.') + 1));
                                }
                            });
        }
        return LoraConfig.builder()
                .setTargetModules(
                        args.loraTargetModules == null
                                ? lm.defaultLoraTargets()
                                : args.loraTargetModules)
                .optTaskType(recipe.seq2seq ? "SEQ_2_SEQ_LM" : "CAUSAL_LM")
                .optRank(args.loraR)
                .optAlpha(args.loraAlpha)
                .optDropout(args.loraDropout)
                .optModulesToSave(vocabularyModules)
                .optBaseModelNameOrPath(
                        args.saveBaseModel
                                ? args.outputDir
                                        .resolve(SaveFormat.BASE)
                                        .toAbsolutePath()
                                        .toString()
                                : args.modelNameOrPath)
                .build();
    }

    /**
     * Checks {@code --save_merged_model False}: adapters saved alone need a base kept in a file,
     * and a base quantized as it loaded is named as its float checkpoint.
     */
    private void checkAdaptersAlone(
            Path checkpoint, boolean fromCheckpoint, QuantizationConfig stored) {
        if (!args.usePeftLora) {
            throw new IllegalArgumentException(
                    "--save_merged_model False leaves out the merged copy of LoRA adapters: it"
                            + " needs --use_peft_lora True (without adapters the model itself is"
                            + " the output)");
        }
        if (args.saveBaseModel) {
            return;
        }
        if (!(fromCheckpoint && SafetensorsCheckpoint.existsIn(checkpoint))) {
            throw new IllegalArgumentException(
                    "--save_merged_model False saves the adapters alone, but their base "
                            + args.modelNameOrPath
                            + " has its weights in no file (a built-in model, or fresh weights"
                            + " from config.json), so they could never be used: add"
                            + " --save_base_model True to save the base beside them, or drop"
                            + " --save_merged_model False");
        }
        if (quantized != null && stored == null) {
            note(
                    "the adapters are saved alone and name "
                            + args.modelNameOrPath
                            + ", which they were trained on quantized to 4 bits: generate with"
                            + " the same --use_4bit_quantization flags, or save the 4-bit base"
                            + " beside them with --save_base_model True");
        }
    }

    /** Prints a line about a setting that does not apply, once, on rank 0. */
    private void note(String line) {
        if (notes.add(line) && ready) {
            print("note: " + line);
        }
    }

    private void print(String line) {
        if (line == null || !rankZero) {
            return;
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(line);
        out.flush();
    }
}
