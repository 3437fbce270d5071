package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.finetune.data.SentimentLabels;
import ai.djl.fsdp.zoo.finetune.data.Seq2SeqExamples;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.fsdp.zoo.finetune.data.TrainingData;
import java.util.List;
import java.util.function.Consumer;

/**
 * Turns a run's examples into its {@link TrainingData}: for a decoder-only model texts and
 * conversations into sequences of next-token labels (packed or not), for an encoder-decoder model
 * source-target pairs; the one place the task decides the data.
 */
final class ExampleTokenizer {

    private final FinetuneRecipe recipe;

    /**
     * Creates the tokenizer of a recipe's data; its tokenizer, chat format and architecture must be
     * set.
     */
    ExampleTokenizer(FinetuneRecipe recipe) {
        this.recipe = recipe;
    }

    /**
     * Tokenizes a split for the run's task, noting what was cut.
     *
     * @param documents the split's examples
     * @param note prints a line on rank 0
     * @param split the split's role, {@code train} or {@code eval}
     * @return the split's training data
     */
    TrainingData tokenize(List<Document> documents, Consumer<String> note, String split) {
        if (recipe.seq2seq != (documents.get(0).target() != null)) {
            throw new IllegalArgumentException(
                    "--dataset_name "
                            + recipe.args.datasetName
                            + (recipe.seq2seq
                                    ? " holds texts or conversations, but a seq2seq model trains on"
                                            + " source-target pairs: give JSON lines with"
                                            + " --source_field and --target_field, or the built-in "
                                            + SentimentLabels.NAME
                                    : " holds source-target pairs, which train a seq2seq model"
                                            + " (T5): give texts or conversations"));
        }
        if (!recipe.seq2seq) {
            return sequences(documents, note, split).padded(recipe.padId);
        }
        Seq2SeqExamples pairs =
                Seq2SeqExamples.tokenize(
                        documents,
                        recipe.tokenizer,
                        recipe.args.seq2seq.maxSourceLength,
                        recipe.args.seq2seq.maxTargetLength,
                        (EncoderDecoderConfig) recipe.architecture);
        if (pairs.getTruncatedTargets() > 0) {
            note.accept(
                    pairs.getTruncatedTargets()
                            + " "
                            + split
                            + " targets are longer than --max_target_length "
                            + recipe.args.seq2seq.maxTargetLength
                            + " tokens and were cut");
        }
        return pairs;
    }

    private Sequences sequences(List<Document> documents, Consumer<String> note, String split) {
        boolean packed =
                recipe.args.packing
                        || recipe.args.paddingFree
                        || !documents.get(0).isChat() && documents.size() == 1;
        Sequences.Packing packing =
                !packed
                        ? Sequences.Packing.NONE
                        : recipe.args.paddingFree
                                ? Sequences.Packing.PER_DOCUMENT
                                : Sequences.Packing.CROSSING;
        Sequences sequences =
                Sequences.tokenize(
                        documents,
                        recipe.tokenizer,
                        recipe.args.maxSeqLen,
                        packing,
                        recipe.chatFormat,
                        recipe.chat && recipe.args.completionOnlyLoss,
                        recipe.concatToken,
                        recipe.architecture.vocabSize());
        if (sequences.getTruncated() > 0) {
            note.accept(
                    sequences.getTruncated()
                            + " "
                            + split
                            + " examples are longer than --max_seq_len "
                            + recipe.args.maxSeqLen
                            + " and were cut");
        }
        return sequences;
    }
}
