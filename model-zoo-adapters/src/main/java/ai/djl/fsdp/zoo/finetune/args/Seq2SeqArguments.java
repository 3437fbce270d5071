package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.zoo.ModelConfig;
import java.util.List;
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
     * given, must name.
     *
     * @param model the model's configuration
     * @return true for an encoder-decoder model
     * @throws IllegalArgumentException if {@code --task} is unknown or does not fit the model
     */
    public boolean isSeq2Seq(ModelConfig model) {
        boolean encoderDecoder = model.isEncoderDecoder();
        if (task == null) {
            return encoderDecoder;
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
        return encoderDecoder;
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
