package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.zoo.ModelConfig;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import picocli.CommandLine.Option;

/**
 * The task a {@code finetune} run trains and, for an encoder-decoder model (T5), its data: the
 * source and target fields of each JSON line, with Hugging Face's seq2seq scripts' length flags
 * ({@code run_summarization.py}'s column names are accepted as aliases).
 */
public final class Seq2SeqArguments {

    /** The task of a decoder-only model: next-token prediction. */
    public static final String CAUSAL_LM = "causal_lm";

    /** The task of an encoder-decoder model: a target generated from a source. */
    public static final String SEQ2SEQ = "seq2seq";

    /** The data flags of a causal language model, each with what a seq2seq run takes instead. */
    private static final Map<String, String> CAUSAL_ONLY =
            Map.of(
                    "--max_seq_len",
                    "set --max_source_length and --max_target_length",
                    "--packing",
                    "pairs are padded per batch, to at most --max_source_length and"
                            + " --max_target_length",
                    "--padding_free",
                    "pairs are padded per batch, to at most --max_source_length and"
                            + " --max_target_length",
                    "--completion_only_loss",
                    "the loss is on the target alone (--target_field)",
                    "--append_concat_token",
                    "each source and target ends with the end-of-sequence token already",
                    "--dataset_text_field",
                    "name the pairs' fields with --source_field and --target_field",
                    "--chat_template_format",
                    "pairs are not conversations: name their fields with --source_field and"
                            + " --target_field",
                    "--chat_template_kwargs",
                    "pairs are not conversations: name their fields with --source_field and"
                            + " --target_field");

    /** The data flags of a seq2seq model, each with what a causal language model takes instead. */
    private static final Map<String, String> SEQ2SEQ_ONLY =
            Map.of(
                    "--source_field",
                    "name a text's field with --dataset_text_field",
                    "--target_field",
                    "name a text's field with --dataset_text_field",
                    "--max_source_length",
                    "set --max_seq_len",
                    "--max_target_length",
                    "set --max_seq_len");

    @Option(
            names = "--task",
            description =
                    "causal_lm or seq2seq; by default the model's (seq2seq for an encoder-decoder"
                            + " model such as T5), and given, checked against it.")
    public String task;

    @Option(
            names = {"--source_field", "--text_column"},
            defaultValue = "source",
            description = "seq2seq: JSON field of an example's source (default ${DEFAULT-VALUE}).")
    public String sourceField;

    @Option(
            names = {"--target_field", "--summary_column"},
            defaultValue = "target",
            description = "seq2seq: JSON field of an example's target (default ${DEFAULT-VALUE}).")
    public String targetField;

    @Option(
            names = "--max_source_length",
            defaultValue = "1024",
            description = "seq2seq: the most source tokens; longer ones are cut (default 1024).")
    public int maxSourceLength;

    @Option(
            names = "--max_target_length",
            defaultValue = "128",
            description =
                    "seq2seq: the most target tokens; longer ones are cut, and counted"
                            + " (default 128).")
    public int maxTargetLength;

    /**
     * Returns whether the run trains a seq2seq model: the model's task, which {@code --task}, when
     * given, must name, and for which no data flag of the other task may be given.
     *
     * @param model the model's configuration
     * @param given whether a flag (any of its names) was given on the command line
     * @return true for an encoder-decoder model
     * @throws IllegalArgumentException if {@code --task} is unknown or does not fit the model, or
     *     naming a flag given that only the other task reads and what to use instead
     */
    public boolean isSeq2Seq(ModelConfig model, Predicate<String> given) {
        boolean encoderDecoder = model.isEncoderDecoder();
        checkTask(model);
        Map<String, String> otherTasks = encoderDecoder ? CAUSAL_ONLY : SEQ2SEQ_ONLY;
        // In a fixed order, so that the same command line always names the same flag.
        otherTasks.keySet().stream()
                .sorted()
                .filter(given)
                .findFirst()
                .ifPresent(
                        flag -> {
                            throw new IllegalArgumentException(
                                    flag
                                            + " does not apply to model_type "
                                            + model.modelType()
                                            + (encoderDecoder
                                                    ? ", a seq2seq model trained on source-target"
                                                            + " pairs"
                                                    : ", a decoder-only model trained on texts or"
                                                            + " conversations")
                                            + ": leave it out; "
                                            + otherTasks.get(flag));
                        });
        return encoderDecoder;
    }

    private void checkTask(ModelConfig model) {
        boolean encoderDecoder = model.isEncoderDecoder();
        if (task == null) {
            return;
        }
        if (!List.of(CAUSAL_LM, SEQ2SEQ).contains(task)) {
            throw new IllegalArgumentException(
                    "--task "
                            + task
                            + " is not a task: give causal_lm or seq2seq, or leave it out to take"
                            + " the model's");
        }
        if (SEQ2SEQ.equals(task) != encoderDecoder) {
            throw new IllegalArgumentException(
                    "--task "
                            + task
                            + " does not fit model_type "
                            + model.modelType()
                            + ", "
                            + (encoderDecoder
                                    ? "an encoder-decoder model: give --task seq2seq"
                                    : "a decoder-only model: give --task causal_lm")
                            + ", or leave --task out");
        }
    }

    /**
     * Checks the lengths.
     *
     * @throws IllegalArgumentException naming a length that is not at least 2
     */
    public void check() {
        if (maxSourceLength < 2 || maxTargetLength < 2) {
            throw new IllegalArgumentException(
                    "--max_source_length and --max_target_length must be at least 2 (a token and"
                            + " the end of sequence), got "
                            + maxSourceLength
                            + " and "
                            + maxTargetLength);
        }
    }
}
