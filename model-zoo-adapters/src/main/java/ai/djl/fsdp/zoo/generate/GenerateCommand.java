package ai.djl.fsdp.zoo.generate;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.cli.Subcommand;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.JinjaChatTemplate;
import ai.djl.fsdp.zoo.finetune.args.QuantizationArguments;
import ai.djl.fsdp.zoo.finetune.data.Seq2SeqExamples;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.ParameterStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code bin/fsdp generate}: continues a prompt with a model from a checkpoint directory. */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description =
                "Continue a prompt with a causal language model (GPT-2, Llama), or generate an"
                        + " encoder-decoder model's (T5's) target for it, and print the text.")
public final class GenerateCommand implements Subcommand {

    @Spec private CommandSpec spec;

    @Option(
            names = "--model",
            required = true,
            description =
                    "Hugging Face checkpoint directory (config.json, *.safetensors), the"
                        + " --output_dir of finetune (LoRA: its merged model, or the adapters on"
                        + " their base_model_name_or_path), or a built-in architecture with random"
                        + " weights: gpt2-tiny, gpt2-mini, llama-tiny, mistral-tiny, qwen2-tiny,"
                        + " qwen3-tiny, t5-tiny.")
    private String model;

    @Option(
            names = "--prompt",
            required = true,
            description = "The text to continue, or an encoder-decoder model's source.")
    private String prompt;

    @Option(
            names = "--max_new_tokens",
            defaultValue = "32",
            description = "Most tokens to generate (default ${DEFAULT-VALUE}).")
    private int maxNewTokens;

    @Option(
            names = "--temperature",
            defaultValue = "0",
            description =
                    "Sampling temperature; 0 is greedy, what an encoder-decoder model takes"
                            + " (default ${DEFAULT-VALUE}).")
    private float temperature;

    @Option(
            names = "--top_k",
            defaultValue = "0",
            description =
                    "Sample among the k most likely tokens; 0 is off (default ${DEFAULT-VALUE}).")
    private int topK;

    @Option(
            names = "--top_p",
            defaultValue = "1",
            description = "Sample within this probability mass (default ${DEFAULT-VALUE}).")
    private float topP;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Sampling seed (default ${DEFAULT-VALUE}).")
    private long seed;

    @Option(
            names = "--print_token_ids",
            description =
                    "Also print the generated token ids on standard error: what the model chose"
                        + " even where the tokenizer spells nothing for them (fresh weights over a"
                        + " vocabulary larger than the tokenizer's).")
    private boolean printTokenIds;

    @Option(names = "--tokenizer", description = "tokenizer.json (default: the one in --model).")
    private Path tokenizer;

    @Mixin private QuantizationArguments quantization;

    @Override
    public Integer call() throws Exception {
        // DJL's start-up logging (engine, CUDA detection) is not the user's output.
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "error");
        }
        if (maxNewTokens < 0) {
            throw new IllegalArgumentException(
                    "--max_new_tokens " + maxNewTokens + " must be 0 or more");
        }
        boolean checkpoint = Files.isDirectory(Path.of(model));
        if (!checkpoint && tokenizer == null) {
            throw new IllegalArgumentException(
                    "--model " + model + " is not a directory: built-in models need --tokenizer");
        }
        ModelLocation location = checkpoint ? ModelLocation.of(Path.of(model)) : null;
        if (location != null && location.note() != null) {
            spec.commandLine().getErr().println("note: " + location.note());
            spec.commandLine().getErr().flush();
        }
        Path directory = checkpoint ? location.tokenizerDirectory() : null;
        Path tokenizerPath = tokenizer != null ? tokenizer : directory.resolve(Tokenizers.FILE);
        QuantizationConfig quantized = quantization.resolve();
        QuantizationConfig stored =
                checkpoint ? QuantizationConfig.read(location.checkpoint()) : null;
        if (stored != null) {
            quantized = stored;
        }
        ModelConfig family =
                checkpoint ? ModelFamilies.read(location.checkpoint()) : Models.builtin(model);
        String sampling = family.isEncoderDecoder() ? samplingFlag() : null;
        if (sampling != null) {
            throw new IllegalArgumentException(
                    sampling
                            + ": an encoder-decoder model (model_type "
                            + family.modelType()
                            + ") generates greedily; leave --temperature at 0 and --top_k,"
                            + " --top_p and --seed out");
        }
        DistributedEnv env = DistributedEnv.fromEnvironment();
        if (env.getWorldSize() > 1) {
            return generateSharded(env, location, directory, tokenizerPath, quantized);
        }
        try (NDManager manager = Engine.getEngine("PyTorch").newBaseManager(RankDevice.of(env));
                HuggingFaceTokenizer tok = Tokenizers.load(tokenizerPath, "--tokenizer")) {
            VocabularyResize grown = checkpoint ? location.grownVocabulary() : null;
            PretrainedModel lm;
            if (!checkpoint) {
                lm = Models.createPretrained(family, manager);
            } else if (stored != null) {
                // The 4-bit layers in place before anything is initialized (one float weight at
                // a time, a placeholder): the checkpoint's packed tensors are theirs.
                lm =
                        Models.forAnyCheckpoint(
                                grown == null
                                        ? family
                                        : ModelFamilies.withVocabSize(family, grown.getRows()));
                stored.apply(lm);
                lm.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
                HfCheckpoint.load(lm, location.checkpoint(), grown);
            } else {
                lm =
                        grown == null
                                ? Models.loadPretrained(location.checkpoint(), manager)
                                : Models.loadPretrained(location.checkpoint(), manager, grown);
            }
            if (quantized != null && stored == null) {
                quantized.apply(lm);
            }
            if (checkpoint && location.adapters() != null) {
                Lora.load(lm, location.adapters());
            }
            generate(
                    manager,
                    tok,
                    directory,
                    lm.getConfig(),
                    (ids, newTokens) ->
                            GreedyDecoding.generate(
                                            lm,
                                            new ParameterStore(manager, false),
                                            ids,
                                            null,
                                            newTokens)
                                    .get(0),
                    () -> Decoder.of((CausalLM) lm),
                    true);
        }
        return 0;
    }

    /**
     * Returns the first sampling flag given, as the user wrote it: a temperature, top-k or top-p
     * that samples, or a seed at all; null if none.
     */
    private String samplingFlag() {
        if (temperature != 0) {
            return "--temperature " + temperature;
        }
        if (topK != 0) {
            return "--top_k " + topK;
        }
        if (topP != 1) {
            return "--top_p " + topP;
        }
        boolean seeded = spec.commandLine().getParseResult().hasMatchedOption("--seed");
        return seeded ? "--seed " + seed : null;
    }

    /**
     * Generates with the model sharded over the launched ranks, as FSDP trains it: each rank holds
     * its shard of the weights (in the checkpoint's {@code torch_dtype}) and every decoding step
     * gathers one unit at a time; rank 0 prints.
     */
    private int generateSharded(
            DistributedEnv env,
            ModelLocation location,
            Path directory,
            Path tokenizerPath,
            QuantizationConfig quantized)
            throws IOException {
        if (location == null) {
            // A built-in model's random weights are drawn apart on each rank: there is no one
            // model to shard.
            throw new IllegalArgumentException(
                    "--model "
                            + model
                            + ": on several ranks generate shards a checkpoint directory (or"
                            + " adapters on their base checkpoint), not a built-in model with"
                            + " random weights; save the model first, or run on one process");
        }
        Path weights = location.checkpoint();
        Path adapters = location.adapters();
        try (ProcessGroup group = ProcessGroups.init(env);
                Model holder = Model.newInstance("generate", group.getDevice());
                NDManager manager = NDManager.newBaseManager(group.getDevice());
                HuggingFaceTokenizer tok = Tokenizers.load(tokenizerPath, "--tokenizer")) {
            VocabularyResize grown = location.grownVocabulary();
            ModelConfig stored = ModelFamilies.read(weights);
            PretrainedModel lm =
                    Models.forAnyCheckpoint(
                            grown == null
                                    ? stored
                                    : ModelFamilies.withVocabSize(stored, grown.getRows()));
            MixedPrecision precision =
                    switch (SaveFormat.torchDtype(weights)) {
                        case BF16 -> MixedPrecision.BF16;
                        case F16 -> MixedPrecision.FP16;
                        default -> MixedPrecision.FP32;
                    };
            try (FsdpTrainer trainer =
                    ShardedStart.initialize(
                                    holder,
                                    lm,
                                    weights,
                                    grown,
                                    quantized,
                                    adapters == null ? null : Lora.readConfig(adapters),
                                    adapters,
                                    (m, network, source) ->
                                            newTrainer(group, precision, m, network, source))
                            .trainer()) {
                ModelConfig config = lm.getConfig();
                generate(
                        manager,
                        tok,
                        directory,
                        config,
                        (ids, newTokens) ->
                                GreedyDecoding.generate(
                                                trainer,
                                                (EncoderDecoderConfig) config,
                                                ids,
                                                null,
                                                newTokens)
                                        .get(0),
                        () -> new ShardedDecoder(trainer, config, group),
                        group.getRank() == 0);
            }
        }
        return 0;
    }

    /** A trainer that only generates: every shard, adapters included, frozen. */
    private static FsdpTrainer newTrainer(
            ProcessGroup group,
            MixedPrecision precision,
            Model model,
            PretrainedModel lm,
            ParameterSource source) {
        // Nothing trains: every shard is frozen, held in the checkpoint's own type.
        lm.freezeParameters(true);
        return FullyShardedDataParallel.newTrainer(
                model,
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optDevices(new Device[] {group.getDevice()}),
                group,
                FsdpConfig.builder()
                        .optWrapPolicy(lm.defaultWrapPolicy())
                        .optMixedPrecision(precision)
                        .build(),
                TrainerOptions.builder().optInitialValues(source).optGatherOnClose(false).build());
    }

    /**
     * Generates with the model as its kind generates: an encoder-decoder model its target for the
     * prompt, a causal language model the prompt's continuation.
     */
    private void generate(
            NDManager manager,
            HuggingFaceTokenizer tok,
            Path directory,
            ModelConfig modelConfig,
            TargetDecoding targets,
            Supplier<Decoder> decoder,
            boolean prints)
            throws IOException {
        if (modelConfig instanceof EncoderDecoderConfig config) {
            generateTarget(manager, tok, config, targets, prints);
        } else {
            generate(manager, tok, directory, modelConfig, new Generator(decoder.get()), prints);
        }
    }

    /** Greedy decoding of one source's target, whole or sharded. */
    private interface TargetDecoding {
        long[] generate(NDArray sourceIds, int maxNewTokens);
    }

    /**
     * Generates an encoder-decoder model's target for the prompt, its source as finetune tokenizes
     * sources (ending with the end-of-sequence token), and prints the target's text.
     */
    private void generateTarget(
            NDManager manager,
            HuggingFaceTokenizer tok,
            EncoderDecoderConfig config,
            TargetDecoding decoding,
            boolean prints) {
        long[] source = Seq2SeqExamples.encode(tok, prompt, config);
        long[] target;
        try (NDManager scope = manager.newSubManager()) {
            target =
                    decoding.generate(
                            scope.create(source, new Shape(1, source.length)), maxNewTokens);
        }
        if (prints) {
            PrintWriter out = spec.commandLine().getOut();
            printTokenIds(target);
            out.println(GreedyDecoding.text(tok, target, config));
            out.flush();
        }
    }

    private void generate(
            NDManager manager,
            HuggingFaceTokenizer tok,
            Path directory,
            ModelConfig modelConfig,
            Generator generator,
            boolean prints)
            throws IOException {
        JinjaChatTemplate chat =
                directory != null
                        ? JinjaChatTemplate.read(directory.resolve(ChatTemplate.CONFIG_FILE))
                        : null;
        List<Long> stops = new ArrayList<>(modelConfig.eosTokenIds());
        long[] promptIds;
        if (chat != null) {
            // A chat model answers the prompt as a user's message, in its own template.
            String text = chat.generationPrompt(List.of(Map.of("role", "user", "content", prompt)));
            promptIds = tok.encode(text).getIds();
            long[] end =
                    chat.endOfTurn() == null ? new long[0] : tok.encode(chat.endOfTurn()).getIds();
            if (end.length == 1) {
                stops.add(end[0]);
            }
        } else {
            promptIds = tok.encode(prompt).getIds();
        }
        int room = modelConfig.maxPositions() - promptIds.length;
        int newTokens = Math.min(maxNewTokens, Math.max(room, 0));
        PrintWriter err = spec.commandLine().getErr();
        if (newTokens < maxNewTokens && prints) {
            err.println(
                    "warning: the model has "
                            + modelConfig.maxPositions()
                            + " positions and the prompt takes "
                            + promptIds.length
                            + ": generating at most "
                            + newTokens
                            + " of --max_new_tokens "
                            + maxNewTokens);
            err.flush();
        }
        GenerationConfig config =
                GenerationConfig.builder()
                        .optMaxNewTokens(newTokens)
                        .optTemperature(temperature)
                        .optTopK(topK)
                        .optTopP(topP)
                        .optSeed(seed)
                        .optStopTokens(stops)
                        .build();
        long[] generated = generator.generate(manager, promptIds, config);
        if (prints) {
            print(chat != null, stops, promptIds, generated, tok);
        }
    }

    private void print(
            boolean chat,
            List<Long> stops,
            long[] promptIds,
            long[] generated,
            HuggingFaceTokenizer tok) {
        PrintWriter out = spec.commandLine().getOut();
        printTokenIds(generated);
        if (chat) {
            long[] reply = generated;
            if (reply.length > 0 && stops.contains(reply[reply.length - 1])) {
                reply = java.util.Arrays.copyOf(reply, reply.length - 1);
            }
            out.println(tok.decode(reply).trim());
        } else {
            // Decode prompt and continuation together: a character's bytes may span them.
            long[] all =
                    java.util.stream.LongStream.concat(
                                    java.util.Arrays.stream(promptIds),
                                    java.util.Arrays.stream(generated))
                            .toArray();
            out.println(tok.decode(all));
        }
        out.flush();
    }

    private void printTokenIds(long[] generated) {
        if (printTokenIds) {
            PrintWriter err = spec.commandLine().getErr();
            err.println("token ids: " + java.util.Arrays.toString(generated));
            err.flush();
        }
    }
}
