package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Source-target pairs tokenized for an encoder-decoder model (T5), as Hugging Face's seq2seq
 * scripts prepare them: the source and the target each end with the end-of-sequence token (the
 * tokenizer's own where it adds one, else appended), each cut to its maximum length keeping that
 * token last. A batch is {@code NDList(inputIds [B, S], attentionMask [B, S], decoderInputIds [B,
 * T])} with the labels {@code [B, T]}: the sources padded with {@code pad_token_id} (mask 0), the
 * targets padded with {@link CausalLmLoss#IGNORE}, and the decoder's inputs the labels shifted
 * right from {@code decoder_start_token_id} (padding read as {@code pad_token_id}).
 */
public final class Seq2SeqExamples implements TrainingData {

    /**
     * The model's special token ids.
     *
     * @param eos the end-of-sequence id
     * @param pad the padding id
     * @param decoderStart the decoder's first input
     */
    public record SpecialIds(long eos, long pad, long decoderStart) {}

    /**
     * One example.
     *
     * @param source the source's token ids
     * @param target the target's token ids, the labels
     */
    public record Pair(long[] source, long[] target) {}

    private final List<Pair> pairs;
    private final SpecialIds ids;
    private final int truncatedTargets;

    private Seq2SeqExamples(List<Pair> pairs, SpecialIds ids, int truncatedTargets) {
        this.pairs = pairs;
        this.ids = ids;
        this.truncatedTargets = truncatedTargets;
    }

    /**
     * Tokenizes source-target pairs ({@link Document#ofPair}).
     *
     * @param documents the pairs
     * @param tokenizer the model's tokenizer
     * @param maxSource the most source tokens
     * @param maxTarget the most target tokens
     * @param ids the model's special ids
     * @param vocabSize the model's vocabulary: every id must be below it
     * @return the examples
     */
    public static Seq2SeqExamples tokenize(
            List<Document> documents,
            HuggingFaceTokenizer tokenizer,
            int maxSource,
            int maxTarget,
            SpecialIds ids,
            int vocabSize) {
        List<Pair> pairs = new ArrayList<>();
        int truncated = 0;
        for (Document document : documents) {
            long[] source = encode(tokenizer, document.text(), ids.eos(), vocabSize);
            long[] target = encode(tokenizer, document.target(), ids.eos(), vocabSize);
            truncated += target.length > maxTarget ? 1 : 0;
            pairs.add(new Pair(cut(source, maxSource), cut(target, maxTarget)));
        }
        return new Seq2SeqExamples(pairs, ids, truncated);
    }

    /** Returns the text's ids, ending with the end-of-sequence id. */
    private static long[] encode(
            HuggingFaceTokenizer tokenizer, String text, long eos, int vocabSize) {
        long[] encoded = tokenizer.encode(text).getIds();
        boolean ended = encoded.length > 0 && encoded[encoded.length - 1] == eos;
        long[] ids = ended ? encoded : Arrays.copyOf(encoded, encoded.length + 1);
        ids[ids.length - 1] = eos;
        Sequences.checkIds(ids, vocabSize);
        return ids;
    }

    /** Cuts ids that end with the end-of-sequence id to at most {@code max}, keeping it last. */
    private static long[] cut(long[] ids, int max) {
        if (ids.length <= max) {
            return ids;
        }
        long[] kept = Arrays.copyOf(ids, max);
        kept[max - 1] = ids[ids.length - 1];
        return kept;
    }

    /** Returns the pairs. */
    public List<Pair> getPairs() {
        return pairs;
    }

    /** Returns how many targets were longer than the most target tokens and were cut. */
    public int getTruncatedTargets() {
        return truncatedTargets;
    }

    @Override
    public int size() {
        return pairs.size();
    }

    @Override
    public long countLabels(int[] indices) {
        long count = 0;
        for (int index : indices) {
            count += pairs.get(index).target().length;
        }
        return count;
    }

    /**
     * Stacks the sources of examples: {@code NDList(inputIds [B, S], attentionMask [B, S])}, padded
     * on the right, what the encoder and generation take.
     *
     * @param manager the manager of the arrays
     * @param indices which examples
     * @return the input ids and their mask
     */
    public NDList sources(NDManager manager, int[] indices) {
        long[][] inputs = pad(indices, true, ids.pad());
        long[][] mask = new long[inputs.length][inputs.length == 0 ? 0 : inputs[0].length];
        for (int row = 0; row < indices.length; row++) {
            Arrays.fill(mask[row], 0, pairs.get(indices[row]).source().length, 1);
        }
        return new NDList(create(manager, inputs), create(manager, mask));
    }

    @Override
    public LabeledBatch batch(NDManager manager, int[] indices) {
        NDList inputs = sources(manager, indices);
        long[][] labels = pad(indices, false, CausalLmLoss.IGNORE);
        long[][] decoder = new long[labels.length][];
        for (int row = 0; row < labels.length; row++) {
            long[] label = labels[row];
            decoder[row] = new long[label.length];
            decoder[row][0] = ids.decoderStart();
            for (int i = 1; i < label.length; i++) {
                decoder[row][i] = label[i - 1] == CausalLmLoss.IGNORE ? ids.pad() : label[i - 1];
            }
        }
        inputs.add(create(manager, decoder));
        return new LabeledBatch(inputs, create(manager, labels));
    }

    /** The sources or the targets of examples, padded on the right to the longest. */
    private long[][] pad(int[] indices, boolean source, long padding) {
        long[][] rows = new long[indices.length][];
        int width = 0;
        for (int row = 0; row < indices.length; row++) {
            Pair pair = pairs.get(indices[row]);
            rows[row] = source ? pair.source() : pair.target();
            width = Math.max(width, rows[row].length);
        }
        for (int row = 0; row < rows.length; row++) {
            int length = rows[row].length;
            rows[row] = Arrays.copyOf(rows[row], width);
            Arrays.fill(rows[row], length, width, padding);
        }
        return rows;
    }

    private static NDArray create(NDManager manager, long[][] rows) {
        long[] flat = Arrays.stream(rows).flatMapToLong(Arrays::stream).toArray();
        return manager.create(flat, new Shape(rows.length, rows.length == 0 ? 0 : rows[0].length));
    }
}
