package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.zoo.finetune.data.ArithmeticChat;
import ai.djl.fsdp.zoo.finetune.output.OutputDirectory;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonParseException;
import com.google.gson.Strictness;
import com.google.gson.ToNumberPolicy;
import com.google.gson.reflect.TypeToken;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

/**
 * What {@code bin/fsdp finetune} trains, on what and how: Hugging Face's and TRL's flag names and
 * value forms ({@code --packing True}, {@code --splits "train,test"}). Booleans take an optional
 * {@code True}/{@code False}.
 */
public final class FinetuneArguments {

    /** The task and, for an encoder-decoder model, its data's flags. */
    @Mixin public Seq2SeqArguments seq2seq = new Seq2SeqArguments();

    /** The command these arguments are parsed for, or null when they were built otherwise. */
    @Spec(Spec.Target.MIXEE)
    private CommandSpec command;

    @Option(
            names = "--model_name_or_path",
            defaultValue = "gpt2-tiny",
            description =
                    "Hugging Face checkpoint directory (config.json, *.safetensors; config.json"
                        + " alone trains fresh weights), or a built-in architecture trained from"
                        + " scratch: gpt2-tiny, gpt2-mini, llama-tiny, mistral-tiny, qwen2-tiny,"
                        + " qwen3-tiny, t5-tiny (default ${DEFAULT-VALUE}).")
    public String modelNameOrPath;

    @Option(
            names = "--tokenizer_name",
            description =
                    "tokenizer.json, or byte-level (the project's own 257-token tokenizer;"
                            + " default for built-in models; else the checkpoint's).")
    public String tokenizerName;

    @Option(
            names = "--pad_to_multiple_of",
            defaultValue = "8",
            description =
                    "When the tokenizer (with the chat template's tokens) is larger than a"
                        + " checkpoint's vocabulary, the embedding and an untied head grow to its"
                        + " size rounded up to a multiple of this, as resize_token_embeddings does"
                        + " (default ${DEFAULT-VALUE}; 1 for none).")
    public int padToMultipleOf;

    @Option(
            names = "--mean_resizing",
            arity = "0..1",
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "Draw a grown vocabulary's new rows around the old rows' mean and covariance"
                        + " (transformers' mean_resizing, default true); False: from the normal of"
                        + " the config's initializer_range.")
    public boolean meanResizing;

    @Option(
            names = {"--dataset_name", "--dataset"},
            defaultValue = ArithmeticChat.NAME,
            description =
                    "A text file, a JSON-lines file, a directory with one file per split, or the"
                            + " built-in ${DEFAULT-VALUE} (generated question/answer chats).")
    public String datasetName;

    @Option(
            names = "--dataset_text_field",
            defaultValue = "text",
            description = "JSON field of a text example (default ${DEFAULT-VALUE}).")
    public String datasetTextField;

    @Option(
            names = "--splits",
            defaultValue = "train,test",
            description = "Train and eval split names (default ${DEFAULT-VALUE}).")
    public String splits;

    @Option(
            names = "--validation_split_percentage",
            defaultValue = "5",
            description =
                    "Percent of a single file held out as the eval split (default"
                            + " ${DEFAULT-VALUE}).")
    public double validationSplitPercentage;

    @Option(
            names = "--chat_template_format",
            description =
                    "chatml: render conversations with ChatML (its markers added to the"
                            + " tokenizer). Default: the tokenizer's own chat_template"
                            + " (tokenizer_config.json beside tokenizer.json), else chatml.")
    public String chatTemplateFormat;

    @Option(
            names = "--chat_template_kwargs",
            description =
                    "Extra variables for the tokenizer's own chat_template, a JSON object (TRL's"
                            + " chat_template_kwargs), e.g. '{\"enable_thinking\": false}'.")
    public String chatTemplateKwargs;

    @Option(
            names = "--packing",
            arity = "0..1",
            fallbackValue = "true",
            description = "Pack examples into full --max_seq_len blocks (default false).")
    public boolean packing;

    @Option(
            names = "--padding_free",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Pack examples, keeping attention and position ids inside each example"
                            + " (implies --packing; default false).")
    public boolean paddingFree;

    @Option(
            names = "--completion_only_loss",
            arity = "0..1",
            fallbackValue = "true",
            defaultValue = "true",
            description = "Train on the assistant's replies only (default true).")
    public boolean completionOnlyLoss;

    @Option(
            names = "--append_concat_token",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Append the end-of-sequence token to each text example: the tokenizer's"
                            + " eos_token (tokenizer_config.json), else config.json's"
                            + " eos_token_id (default false).")
    public boolean appendConcatToken;

    @Option(
            names = "--add_special_tokens",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "Let the tokenizer add its special tokens to each example: only false (the"
                            + " default) is supported, examples are tokenized as written; True"
                            + " is refused.")
    public boolean addSpecialTokens;

    @Option(
            names = {"--max_seq_len", "--max_seq_length"},
            defaultValue = "128",
            description = "Tokens per training sequence (default ${DEFAULT-VALUE}).")
    public int maxSeqLen;

    @Option(
            names = "--num_train_epochs",
            defaultValue = "1",
            description = "Epochs over the train split (default ${DEFAULT-VALUE}).")
    public double numTrainEpochs;

    @Option(
            names = "--max_steps",
            defaultValue = "-1",
            description = "Optimizer steps; overrides --num_train_epochs when > 0.")
    public int maxSteps;

    @Option(
            names = "--per_device_train_batch_size",
            defaultValue = "8",
            description = "Sequences per rank and micro-batch (default ${DEFAULT-VALUE}).")
    public int perDeviceTrainBatchSize;

    @Option(
            names = "--per_device_eval_batch_size",
            defaultValue = "8",
            description = "Sequences per rank and eval batch (default ${DEFAULT-VALUE}).")
    public int perDeviceEvalBatchSize;

    @Option(
            names = "--gradient_accumulation_steps",
            defaultValue = "1",
            description = "Micro-batches per optimizer step (default ${DEFAULT-VALUE}).")
    public int gradientAccumulationSteps;

    @Option(
            names = "--learning_rate",
            defaultValue = "5e-5",
            description =
                    "Peak learning rate of AdamW (default ${DEFAULT-VALUE}, as Hugging Face's).")
    public float learningRate;

    @Option(
            names = "--lr_scheduler_type",
            defaultValue = "linear",
            description =
                    "linear, cosine, constant or constant_with_warmup (default ${DEFAULT-VALUE}, as"
                            + " Hugging Face's).")
    public String lrSchedulerType;

    @Option(
            names = "--warmup_ratio",
            defaultValue = "0",
            description = "Fraction of the steps spent warming up (default ${DEFAULT-VALUE}).")
    public double warmupRatio;

    @Option(
            names = "--warmup_steps",
            defaultValue = "0",
            description = "Warm-up steps; wins over --warmup_ratio when > 0.")
    public int warmupSteps;

    @Option(
            names = "--weight_decay",
            defaultValue = "0",
            description =
                    "AdamW's decoupled weight decay, for all parameters but biases and"
                            + " normalization weights, as Hugging Face's Trainer (default"
                            + " ${DEFAULT-VALUE}).")
    public float weightDecay;

    @Option(
            names = "--adam_beta1",
            defaultValue = "0.9",
            description = "AdamW's first-moment decay (default ${DEFAULT-VALUE}).")
    public float adamBeta1;

    @Option(
            names = "--adam_beta2",
            defaultValue = "0.999",
            description = "AdamW's second-moment decay (default ${DEFAULT-VALUE}).")
    public float adamBeta2;

    @Option(
            names = "--adam_epsilon",
            defaultValue = "1e-8",
            description = "AdamW's epsilon (default ${DEFAULT-VALUE}).")
    public float adamEpsilon;

    @Option(
            names = "--max_grad_norm",
            defaultValue = "1.0",
            description = "Clip the global gradient norm; 0 turns clipping off (default 1.0).")
    public float maxGradNorm;

    @Option(
            names = "--max_non_finite_steps",
            defaultValue = "1",
            description =
                    "Stop after this many optimizer steps in a row whose loss or gradient norm is"
                            + " NaN or infinite; such steps update nothing (default 1).")
    public int maxNonFiniteSteps;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Seed of weights, dropout, shuffling and data (default 42).")
    public int seed;

    @Option(
            names = {"--eval_strategy", "--evaluation_strategy"},
            defaultValue = "epoch",
            description = "no, steps or epoch: when to evaluate (default ${DEFAULT-VALUE}).")
    public String evalStrategy;

    @Option(
            names = "--eval_steps",
            defaultValue = "0",
            description =
                    "Steps between evaluations with --eval_strategy steps; 0: --logging_steps.")
    public int evalSteps;

    @Option(
            names = "--exact_match_samples",
            defaultValue = "200",
            description =
                    "Eval conversations whose last reply (seq2seq: eval sources whose target) is"
                            + " generated and compared exactly, before and after training; 0 turns"
                            + " it off (default 200).")
    public int exactMatchSamples;

    @Option(
            names = "--exact_match_batch_size",
            description =
                    "The most exact-match questions a rank decodes together (their logits and"
                            + " key-value cache grow with it); default 4 x"
                            + " --per_device_eval_batch_size.")
    public Integer exactMatchBatchSize;

    @Option(
            names = "--logging_steps",
            defaultValue = "10",
            description =
                    "Steps between log lines and metrics.jsonl rows with --logging_strategy"
                            + " steps, positive (default 10).")
    public int loggingSteps;

    @Option(
            names = "--logging_strategy",
            defaultValue = "steps",
            description = "steps, epoch or no (default ${DEFAULT-VALUE}).")
    public String loggingStrategy;

    @Option(
            names = "--log_level",
            defaultValue = "passive",
            description =
                    "The libraries' logging (DJL's): debug, info (DJL's start-up logging),"
                            + " warning, error, critical or passive (default ${DEFAULT-VALUE}:"
                            + " errors only). The run's own lines print at every level.")
    public String logLevel;

    @Option(
            names = "--use_peft_lora",
            arity = "0..1",
            fallbackValue = "true",
            description = "Train LoRA adapters on a frozen base model instead of every weight.")
    public boolean usePeftLora;

    @Option(names = "--lora_r", defaultValue = "8", description = "LoRA rank (default 8).")
    public int loraR;

    @Option(names = "--lora_alpha", defaultValue = "16", description = "LoRA alpha (default 16).")
    public float loraAlpha;

    @Option(
            names = "--lora_dropout",
            defaultValue = "0.05",
            description = "Dropout on the adapters' input (default 0.05).")
    public float loraDropout;

    @Option(
            names = "--lora_target_modules",
            split = ",",
            description =
                    "Modules to adapt, comma-separated, or all-linear; by default the model's"
                            + " (all-linear, T5's q,v as in PEFT).")
    public List<String> loraTargetModules;

    @Option(
            names = "--output_dir",
            required = true,
            description =
                    "Where the model, metrics.jsonl, training_curves.png and summary.json go; with"
                            + " LoRA the adapters, and the merged model in merged/ (unless"
                            + " --save_merged_model False).")
    public Path outputDir;

    @Option(
            names = "--max_shard_size",
            defaultValue = "5GB",
            description =
                    "The largest safetensors file of the saved model, as Hugging Face's"
                        + " save_pretrained takes it: 5GB, 500MB, 2GiB or bytes (default"
                        + " ${DEFAULT-VALUE}); a larger model is split into"
                        + " model-0000N-of-0000M.safetensors with model.safetensors.index.json.")
    public String maxShardSize;

    @Option(
            names = "--save_base_model",
            arity = "0..1",
            fallbackValue = "true",
            description =
                    "With LoRA, also save the frozen base model without its adapters in base/ (as"
                            + " the merged model is saved; a 4-bit base pre-quantized, as"
                            + " transformers saves one) and name it as the adapters'"
                            + " base_model_name_or_path: for a base from config.json alone (fresh"
                            + " weights) the only copy of what the adapters were trained on.")
    public boolean saveBaseModel;

    @Option(
            names = "--save_merged_model",
            arity = "0..1",
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "With LoRA, also save the base with the adapters merged in merged/ (default"
                            + " ${DEFAULT-VALUE}); false saves the adapters alone (with"
                            + " --save_base_model, the adapters and their base), as PEFT's"
                            + " save_pretrained does, when a merged copy would not fit the"
                            + " disk.")
    public boolean saveMergedModel;

    @Option(
            names = "--save_dtype",
            defaultValue = "auto",
            description =
                    "The element type of the saved (merged) model: auto (the base checkpoint's"
                            + " torch_dtype, as Hugging Face saves it; float32 for a built-in"
                            + " model), float32, bfloat16 or float16.")
    public String saveDtype;

    @Option(
            names = OutputDirectory.OVERWRITE_FLAG,
            description =
                    "Write into --output_dir even if it is a file, the current directory or holds"
                            + " files this tool did not write (same-named files are replaced).")
    public boolean overwriteOutputDir;

    /**
     * Returns whether a flag was given on the command line: by any of its names, whatever its value
     * (not by default, nor by an Accelerate file's defaults).
     *
     * @param flag one of the flag's names
     * @return true if the command line holds it
     */
    public boolean given(String flag) {
        ParseResult parsed = command == null ? null : command.commandLine().getParseResult();
        return parsed != null && parsed.hasMatchedOption(flag);
    }

    /** Returns the train split's name. */
    public String trainSplit() {
        return splitNames()[0];
    }

    /**
     * Returns the most exact-match questions a rank decodes together: {@code
     * --exact_match_batch_size}, or by default four eval batches (a question's prompt and reply are
     * short beside {@code --max_seq_len}).
     */
    public int exactMatchBatchSize() {
        return exactMatchBatchSize != null ? exactMatchBatchSize : 4 * perDeviceEvalBatchSize;
    }

    /**
     * Returns {@code --chat_template_kwargs}: the chat template's extra variables.
     *
     * @return the names and values, empty without the flag
     * @throws IllegalArgumentException if the flag's value is not a JSON object
     */
    public Map<String, Object> chatTemplateVariables() {
        if (chatTemplateKwargs == null) {
            return Map.of();
        }
        Gson gson =
                new GsonBuilder()
                        .setStrictness(Strictness.STRICT)
                        .serializeNulls()
                        .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
                        .create();
        JsonElement parsed;
        try {
            parsed = gson.fromJson(chatTemplateKwargs, JsonElement.class);
        } catch (JsonParseException e) {
            throw kwargsError(e.getMessage());
        }
        if (parsed == null || !parsed.isJsonObject()) {
            throw kwargsError("it is not an object");
        }
        return gson.fromJson(parsed, new TypeToken<Map<String, Object>>() {}.getType());
    }

    private IllegalArgumentException kwargsError(String problem) {
        return new IllegalArgumentException(
                "--chat_template_kwargs "
                        + chatTemplateKwargs
                        + " is not a JSON object ("
                        + problem
                        + "): give the template's variables as one, e.g."
                        + " --chat_template_kwargs '{\"enable_thinking\": false}'");
    }

    /** Returns the eval split's name, or null when nothing is evaluated. */
    public String evalSplit() {
        String[] names = splitNames();
        boolean evaluates = !"no".equals(evalStrategy) || exactMatchSamples > 0;
        return evaluates ? (names.length > 1 ? names[1] : "test") : null;
    }

    private String[] splitNames() {
        String[] names = splits.replace("\"", "").split(",");
        if (names.length > 2 || names[0].isBlank()) {
            throw new IllegalArgumentException(
                    "--splits " + splits + ": give the train and eval splits, e.g. train,test");
        }
        return names;
    }
}
