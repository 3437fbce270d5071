package ai.djl.fsdp.zoo.finetune.args;

import java.util.List;

/**
 * The checks of {@link FinetuneArguments}' values that need no file: sizes and rates in range, and
 * every word-valued flag one of the values Hugging Face accepts, each of which the run honours (one
 * that cannot be honoured here, {@code --add_special_tokens True}, is refused, never ignored). Each
 * failure is one line naming the flag, its value and what to give.
 */
public final class ArgumentChecks {

    /**
     * Hugging Face's {@code IntervalStrategy}: {@code --eval_strategy}, {@code --logging_strategy}.
     */
    static final List<String> STRATEGIES = List.of("no", "steps", "epoch");

    /** Hugging Face's {@code log_level} values, in its order. */
    public static final List<String> LOG_LEVELS =
            List.of("debug", "info", "warning", "error", "critical", "passive");

    private ArgumentChecks() {}

    /**
     * Checks the run's flags.
     *
     * @param args the parsed flags
     * @throws IllegalArgumentException naming the first flag that is out of range or unknown
     */
    public static void check(FinetuneArguments args) {
        args.seq2seq.check();
        requirePositive(args.maxSeqLen, "--max_seq_len");
        requirePositive(args.padToMultipleOf, "--pad_to_multiple_of");
        requirePositive(args.perDeviceTrainBatchSize, "--per_device_train_batch_size");
        requirePositive(args.perDeviceEvalBatchSize, "--per_device_eval_batch_size");
        if (args.exactMatchBatchSize != null) {
            requirePositive(args.exactMatchBatchSize, "--exact_match_batch_size");
        }
        requirePositive(args.gradientAccumulationSteps, "--gradient_accumulation_steps");
        requirePositive(args.maxNonFiniteSteps, "--max_non_finite_steps");
        if (args.maxSteps <= 0 && !(args.numTrainEpochs > 0)) {
            throw new IllegalArgumentException(
                    "give --max_steps or a positive --num_train_epochs, got "
                            + args.numTrainEpochs);
        }
        if (!(args.learningRate > 0)) {
            throw new IllegalArgumentException(
                    "--learning_rate must be positive, got " + args.learningRate);
        }
        if (args.maxGradNorm < 0) {
            throw new IllegalArgumentException(
                    "--max_grad_norm must be positive, or 0 for no clipping; got "
                            + args.maxGradNorm);
        }
        if (args.warmupRatio < 0 || args.warmupRatio >= 1 || args.warmupSteps < 0) {
            throw new IllegalArgumentException(
                    "--warmup_ratio must be in [0, 1) and --warmup_steps >= 0");
        }
        if (!(args.validationSplitPercentage > 0 && args.validationSplitPercentage < 100)) {
            throw new IllegalArgumentException("--validation_split_percentage must be in (0, 100)");
        }
        if ("steps".equals(args.evalStrategy) && args.evalSteps == 0) {
            // As Hugging Face's TrainingArguments: evaluations every --logging_steps.
            args.evalSteps = args.loggingSteps;
        }
        checkStrategy("--eval_strategy", args.evalStrategy, "--eval_steps", args.evalSteps);
        checkStrategy(
                "--logging_strategy", args.loggingStrategy, "--logging_steps", args.loggingSteps);
        if (!LOG_LEVELS.contains(args.logLevel)) {
            throw new IllegalArgumentException(
                    "--log_level "
                            + args.logLevel
                            + " is not a level: give "
                            + String.join(", ", LOG_LEVELS)
                            + " (Hugging Face's; passive, the default, shows only errors)");
        }
        if (args.addSpecialTokens) {
            throw new IllegalArgumentException(
                    "--add_special_tokens True is not supported: examples are tokenized as"
                            + " written, without the tokenizer's special tokens (a chat"
                            + " template's own tokens mark the turns); pass False or leave the"
                            + " flag out");
        }
    }

    private static void requirePositive(int value, String flag) {
        if (value <= 0) {
            throw new IllegalArgumentException(flag + " must be positive, got " + value);
        }
    }

    /** Checks a strategy flag: one of {@link #STRATEGIES}, {@code steps} with positive steps. */
    private static void checkStrategy(String flag, String value, String stepsFlag, int steps) {
        boolean known = STRATEGIES.contains(value);
        if (!known || "steps".equals(value) && steps <= 0 || steps < 0) {
            throw new IllegalArgumentException(
                    flag
                            + " "
                            + value
                            + (known ? " with " + stepsFlag + " " + steps : "")
                            + ": give no, epoch, or steps with a positive "
                            + stepsFlag);
        }
    }
}
