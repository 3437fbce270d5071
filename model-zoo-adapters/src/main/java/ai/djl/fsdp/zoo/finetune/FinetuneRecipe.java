package ai.djl.fsdp.zoo.finetune;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.optim.Adam;
import ai.djl.fsdp.optim.ParameterGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.fsdp.zoo.chat.ChatFormat;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.TokenizerJson;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.finetune.data.DistributedSampler;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.finetune.data.TextDatasets;
import ai.djl.fsdp.zoo.finetune.data.TrainingData;
import ai.djl.fsdp.zoo.finetune.report.RunReport;
import ai.djl.fsdp.zoo.hf.PretrainedConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.hf.VocabularyResize;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.optimizer.Optimizer;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What a fine-tuning run is made of, decided before the first step: the tokenizer (with the chat
 * template's tokens), the task (next-token prediction, or for an encoder-decoder model targets from
 * sources), the train and eval data ({@link ExampleTokenizer}), the model's architecture, AdamW and
 * its learning-rate schedule, and the FSDP trainer ({@link #newTrainer}, the one place it is
 * built).
 */
final class FinetuneRecipe implements AutoCloseable {

    final FinetuneArguments args;
    final FsdpArguments fsdp;
    final ProcessGroup group;
    final Path tokenizerFile;
    final HuggingFaceTokenizer tokenizer;
    final boolean chat;
    final ChatFormat chatFormat;
    final ModelConfig architecture;

    /**
     * How the checkpoint's weights grow to the tokenizer's vocabulary, or null when they need not
     * (or the model starts fresh, built at the grown size).
     */
    final VocabularyResize resize;

    /** Whether the model is an encoder-decoder one, trained to generate targets from sources. */
    final boolean seq2seq;

    final TrainingData train;
    final TrainingData eval;
    final List<Document> evalDocuments;
    final long padId;

    /** The token {@code --append_concat_token} appends to each text example, or -1 for none. */
    final long concatToken;

    final long endOfTurn;
    final int stepsPerEpoch;
    final int totalSteps;
    final LearningRateSchedule schedule;

    /** The training loss the trainer evaluates; the loop sets each step's token count on it. */
    final CausalLmLoss loss = new CausalLmLoss();

    private final Path workDirectory;

    private FinetuneRecipe(
            FinetuneArguments args,
            FsdpArguments fsdp,
            ProcessGroup group,
            ModelSource source,
            Consumer<String> note)
            throws IOException {
        this.args = args;
        this.fsdp = fsdp;
        this.group = group;
        seq2seq = args.seq2seq.isSeq2Seq(source.stored(), args::given);
        Map<String, List<Document>> splits =
                TextDatasets.load(
                        args.datasetName,
                        args.trainSplit(),
                        args.evalSplit(),
                        seq2seq
                                ? new TextDatasets.Fields(
                                        args.seq2seq.sourceField, args.seq2seq.targetField)
                                : TextDatasets.Fields.text(args.datasetTextField),
                        args.validationSplitPercentage / 100,
                        args.seed);
        List<Document> trainDocuments = splits.get(args.trainSplit());
        chat = trainDocuments.get(0).isChat();
        chatFormat = ChatFormats.of(args, source.tokenizer());
        if (chat && chatFormat.endOfTurn() == null) {
            throw new IllegalArgumentException(
                    ChatFormats.config(source.tokenizer())
                            + " has a chat_template but no eos_token, the token that ends the"
                            + " assistant's replies: add \"eos_token\" (the token the template"
                            + " closes a reply with) to that file, or train with"
                            + " --chat_template_format chatml");
        }
        if (chat && args.chatTemplateFormat == null && chatFormat != ChatTemplate.CHATML) {
            note.accept("conversations are rendered with the tokenizer's own chat_template");
        }
        workDirectory = Files.createTempDirectory("finetune-tokenizer");
        tokenizerFile = workDirectory.resolve(Tokenizers.FILE);
        int vocab = prepareTokenizer(source.tokenizer(), tokenizerFile);
        tokenizer = Tokenizers.load(tokenizerFile, "--tokenizer_name");
        long endOfText = singleToken(ByteLevelTokenizer.END_OF_TEXT);
        padId = Math.max(0, endOfText);
        endOfTurn = chat ? singleToken(chatFormat.endOfTurn()) : endOfText;
        ModelConfig stored = source.architecture(vocab, endOfText);
        concatToken = args.appendConcatToken ? endOfSequence(source.tokenizer(), stored) : -1;
        // As the recipe's script does: resize_token_embeddings(len(tokenizer), multiple).
        int rows =
                vocab > stored.vocabSize()
                        ? VocabularyResize.paddedSize(vocab, args.padToMultipleOf)
                        : stored.vocabSize();
        architecture =
                rows == stored.vocabSize() ? stored : ModelFamilies.withVocabSize(stored, rows);
        resize =
                rows > stored.vocabSize() && source.hasWeights()
                        ? VocabularyResize.of(
                                stored.vocabSize(),
                                rows,
                                args.meanResizing,
                                ((PretrainedConfig) stored).initializerRange(),
                                args.seed)
                        : null;
        if (rows > stored.vocabSize()) {
            note.accept(
                    "the tokenizer has "
                            + vocab
                            + " tokens (with the chat template's), the checkpoint "
                            + stored.vocabSize()
                            + ": "
                            + (resize != null
                                    ? resize.toString()
                                    : "the model, fresh, is built with " + rows + " rows")
                            + " (--pad_to_multiple_of "
                            + args.padToMultipleOf
                            + ")");
        }
        if (args.maxSeqLen > architecture.maxPositions()) {
            throw new IllegalArgumentException(
                    "--max_seq_len "
                            + args.maxSeqLen
                            + " exceeds the model's "
                            + architecture.maxPositions()
                            + " positions");
        }
        ExampleTokenizer examples = new ExampleTokenizer(this);
        train = examples.tokenize(trainDocuments, note, "train");
        if (train.size() == 0) {
            throw emptySplit(args.trainSplit());
        }
        evalDocuments = args.evalSplit() == null ? List.of() : splits.get(args.evalSplit());
        TrainingData evalSequences =
                evalDocuments.isEmpty() ? null : examples.tokenize(evalDocuments, note, "eval");
        if (evalSequences != null && evalSequences.size() == 0) {
            note.accept(
                    emptySplit(args.evalSplit()).getMessage() + "; the run goes on unevaluated");
            evalSequences = null;
        }
        eval = evalSequences;
        int perStep = args.gradientAccumulationSteps;
        int globalBatch = args.perDeviceTrainBatchSize * group.getSize() * perStep;
        if (train.size() < globalBatch) {
            note.accept(
                    "the train split makes "
                            + train.size()
                            + " sequences, fewer than one global batch of "
                            + globalBatch
                            + " (--per_device_train_batch_size "
                            + args.perDeviceTrainBatchSize
                            + " x "
                            + group.getSize()
                            + " ranks x --gradient_accumulation_steps "
                            + perStep
                            + "): every step sees the same few sequences; give more data or"
                            + " smaller batches");
        }
        DistributedSampler sampler = trainSampler();
        // As Hugging Face's Trainer: an epoch's last step takes the batches left, fewer if so.
        stepsPerEpoch = (sampler.getBatchesPerEpoch() + perStep - 1) / perStep;
        totalSteps =
                args.maxSteps > 0
                        ? args.maxSteps
                        : (int) Math.ceil(args.numTrainEpochs * stepsPerEpoch);
        int warmup =
                args.warmupSteps > 0
                        ? args.warmupSteps
                        : (int) Math.ceil(args.warmupRatio * totalSteps);
        schedule =
                new LearningRateSchedule(
                        LearningRateSchedule.Type.of(args.lrSchedulerType),
                        args.learningRate,
                        warmup,
                        totalSteps);
    }

    private IllegalArgumentException emptySplit(String split) {
        return new IllegalArgumentException(
                "--dataset_name "
                        + args.datasetName
                        + ": the "
                        + split
                        + " split yields no sequence to train or evaluate on (its text is shorter"
                        + " than two tokens): give more data");
    }

    /**
     * Reads the data and decides the run.
     *
     * @param args the run's flags
     * @param fsdp the sharding flags
     * @param group the ranks
     * @param source the model and its tokenizer
     * @param note prints a line on rank 0
     * @return the recipe; close it at the end
     * @throws IOException if a file cannot be read
     */
    static FinetuneRecipe prepare(
            FinetuneArguments args,
            FsdpArguments fsdp,
            ProcessGroup group,
            ModelSource source,
            Consumer<String> note)
            throws IOException {
        return new FinetuneRecipe(args, fsdp, group, source, note);
    }

    /**
     * Describes the run's plan in one line: the model, the data, the ranks and steps, and where the
     * output and the metrics go.
     *
     * @param lm the model, adapters added
     * @param lora whether it trains LoRA adapters
     * @param metricsFile where the metrics log is written as the run goes
     * @return the line
     */
    String describe(PretrainedModel lm, boolean lora, Path metricsFile) {
        return String.format(
                Locale.ROOT,
                "training %s (%,d parameters%s) on %s: %d train sequences, %s; %d ranks,"
                        + " %d steps (%d per epoch), output in %s; follow with tail -f %s",
                args.modelNameOrPath,
                RunReport.countParameters(lm),
                lora ? ", LoRA adapters" : "",
                args.datasetName,
                train.size(),
                eval == null ? "no eval split" : eval.size() + " eval sequences",
                group.getSize(),
                totalSteps,
                stepsPerEpoch,
                args.outputDir,
                metricsFile);
    }

    /**
     * Copies the tokenizer (and, for a chat model, its template) beside the model files.
     *
     * @param directory the output directory
     * @param model the directory of the saved model in it (the same, or {@code merged/})
     * @throws IOException if a file cannot be written
     */
    void writeTokenizer(Path directory, Path model) throws IOException {
        for (Path target :
                directory.equals(model) ? new Path[] {directory} : new Path[] {directory, model}) {
            Files.copy(tokenizerFile, target.resolve(Tokenizers.FILE));
            if (chat) {
                chatFormat.writeConfig(target);
            }
        }
    }

    /** Returns a new sampler over the train sequences, at epoch 0. */
    DistributedSampler trainSampler() {
        return new DistributedSampler(
                train.size(),
                group.getRank(),
                group.getSize(),
                args.perDeviceTrainBatchSize,
                true,
                args.seed);
    }

    /**
     * Builds the FSDP trainer: PyTorch's AdamW with the schedule (no weight decay on biases and
     * normalization weights), the causal LM loss (the step's global token mean, computed with the
     * head's product where the head is in the root: {@link CausalLM#setFusedLossHead}), and how to
     * shard.
     *
     * @param model the model, its block set
     * @param lm the block
     * @param source the checkpoint's shards, or null for fresh weights
     * @param listeners the run's training listeners
     * @return the trainer
     */
    FsdpTrainer newTrainer(
            Model model,
            PretrainedModel lm,
            ParameterSource source,
            List<TrainingListener> listeners) {
        // A decoder-only model's head in the root (tied, or left there by the wrap list) has its
        // product computed by the loss a chunk of rows at a time: no whole logits. A head that is a
        // unit, and an encoder-decoder model's, gives logits.
        if (lm instanceof CausalLM causal) {
            causal.setFusedLossHead(true);
        }
        // PyTorch's AdamW, as Hugging Face's Trainer uses it.
        Optimizer adamW =
                Adam.adamWBuilder()
                        .optLearningRateTracker(schedule)
                        .optWeightDecays(args.weightDecay)
                        .optBetas(args.adamBeta1, args.adamBeta2)
                        .optEpsilon(args.adamEpsilon)
                        .build();
        DefaultTrainingConfig training =
                new DefaultTrainingConfig(loss)
                        .optOptimizer(adamW)
                        .optDevices(new Device[] {group.getDevice()})
                        .addTrainingListeners(listeners.toArray(new TrainingListener[0]));
        FsdpConfig.Builder config =
                FsdpConfig.builder()
                        .optShardingStrategy(fsdp.strategy())
                        .optWrapPolicy(
                                fsdp.wrapPolicy(
                                        lm, (long) args.perDeviceTrainBatchSize * args.maxSeqLen))
                        .optPrefetch(fsdp.prefetch())
                        .optMixedPrecision(fsdp.mixedPrecision)
                        .optSyncModuleStates(fsdp.syncModuleStates)
                        .optCpuOffload(fsdp.offloadParams)
                        .optCommunicationQuantization(fsdp.quantization());
        fsdp.activationCheckpointing().ifPresent(config::optActivationCheckpointing);
        TrainerOptions.Builder options =
                TrainerOptions.builder()
                        .optGradientAccumulationSteps(args.gradientAccumulationSteps)
                        .optMaxNonFiniteSteps(args.maxNonFiniteSteps)
                        // Hugging Face's Trainer: no weight decay on biases and norms.
                        .optParameterGroups(
                                ParameterGroups.builder()
                                        .optNoDecay(ParameterGroups.biasesAndNorms())
                                        .build())
                        .optInitialValues(source)
                        // The model is saved one unit at a time before the trainer closes.
                        .optGatherOnClose(false);
        if (args.maxGradNorm > 0) {
            options.optMaxGradNorm(args.maxGradNorm);
        }
        return FullyShardedDataParallel.newTrainer(
                model, training, group, config.build(), options.build());
    }

    private int prepareTokenizer(Path source, Path target) throws IOException {
        Path original = source;
        if (source == null) {
            original = workDirectory.resolve("byte-level.json");
            ByteLevelTokenizer.write(original);
        } else {
            // A file that is not a tokenizer.json (binary, cut short) is named with the flag.
            Tokenizers.load(source, "--tokenizer_name").close();
            Tokenizers.checkAddedTokens(source, "--tokenizer_name");
        }
        return ChatTemplate.writeTokenizer(original, target, chat && chatFormat.addsMarkers());
    }

    /**
     * Returns the token {@code --append_concat_token} appends, TRL's {@code
     * tokenizer.eos_token_id}: the {@code eos_token} of the {@code tokenizer_config.json} beside
     * the tokenizer, else the model's first {@code eos_token_id} (the byte-level tokenizer's and
     * GPT-2's {@code <|endoftext|>}).
     */
    private long endOfSequence(Path tokenizerSource, ModelConfig stored) throws IOException {
        Path config = tokenizerSource == null ? null : ChatFormats.config(tokenizerSource);
        String eos = TokenizerJson.eosToken(config);
        long id = eos == null ? -1 : singleToken(eos);
        if (eos != null && id < 0) {
            throw new IllegalArgumentException(
                    "--append_concat_token appends the eos_token of "
                            + config
                            + ", but \""
                            + eos
                            + "\" is not one token of the tokenizer: fix eos_token there, or"
                            + " leave out --append_concat_token");
        }
        if (eos == null && stored.eosTokenIds().isEmpty()) {
            throw new IllegalArgumentException(
                    "--append_concat_token appends the end-of-sequence token, but the tokenizer"
                            + " has no eos_token ("
                            + (config == null ? "no tokenizer_config.json" : config)
                            + ") and the model's config.json no eos_token_id: add one of them, or"
                            + " leave out --append_concat_token");
        }
        return eos != null ? id : stored.eosTokenIds().get(0);
    }

    /** Returns the id of a token the tokenizer has as one token, or -1. */
    private long singleToken(String token) {
        long[] ids = tokenizer.encode(token).getIds();
        return ids.length == 1 ? ids[0] : -1;
    }

    @Override
    public void close() throws IOException {
        tokenizer.close();
        Files.deleteIfExists(workDirectory.resolve("byte-level.json"));
        Files.deleteIfExists(tokenizerFile);
        Files.deleteIfExists(workDirectory);
    }

    /** The model to train and its tokenizer. */
    interface ModelSource {
        /** Returns the tokenizer to start from, or null for the byte-level one. */
        Path tokenizer();

        /**
         * Returns the model's configuration as stored, before a tokenizer sizes it.
         *
         * @return the configuration
         * @throws IOException if a checkpoint's config cannot be read
         */
        ModelConfig stored() throws IOException;

        /** Returns whether the model starts from a checkpoint's weights (else fresh ones). */
        boolean hasWeights();

        /**
         * Returns the architecture for a tokenizer of {@code vocab} tokens.
         *
         * @param vocab the tokenizer's size
         * @param endOfText its end-of-text id, or -1
         * @return the architecture
         * @throws IOException if a checkpoint's config cannot be read
         */
        ModelConfig architecture(int vocab, long endOfText) throws IOException;
    }

    /**
     * Returns a built-in architecture sized to the tokenizer.
     *
     * @param name the built-in name
     * @param vocab the vocabulary size
     * @param endOfText the end-of-text id, or -1
     * @return the architecture
     */
    static ModelConfig builtin(String name, int vocab, long endOfText) {
        JsonObject json = Models.builtin(name).toJson();
        json.addProperty("vocab_size", vocab);
        if (endOfText >= 0) {
            json.addProperty("bos_token_id", endOfText);
            json.addProperty("eos_token_id", endOfText);
        }
        return ModelFamilies.parse(json);
    }
}
