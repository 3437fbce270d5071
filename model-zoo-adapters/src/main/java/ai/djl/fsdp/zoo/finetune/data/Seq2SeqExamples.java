package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.fsdp.zoo.EncoderDecoderConfig;
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
 * right by the model ({@link EncoderDecoderConfig#shiftRight}).
 */
public final class Seq2SeqExamples implements TrainingData {

    /**
     * One example.
     *
     * @param source the source's token ids
     * @param target the target's token ids, the labels
     */
    public record Pair(long[] source, long[] target) {}

    private final List<Pair> pairs;
    private final EncoderDecoderConfig model;
    private final int truncatedTargets;

    private Seq2SeqExamples(List<Pair> pairs, EncoderDecoderConfig model, int truncatedTargets) {
        this.pairs = pairs;
        this.model = model;
        this.truncatedTargets = truncatedTargets;
    }

    /**
     * Tokenizes source-target pairs ({@link Document#ofPair}).
     *
     * @param documents the pairs
     * @param tokenizer the model's tokenizer
     * @param maxSource the most source tokens
     * @param maxTarget the most target tokens
     * @param model the model's configuration: its special ids and vocabulary (every id must be
     *     below its size)
     * @return the examples
     */
    public static Seq2SeqExamples tokenize(
            List<Document> documents,
            HuggingFaceTokenizer tokenizer,
            int maxSource,
            int maxTarget,
            EncoderDecoderConfig model) {
        List<Pair> pairs = new ArrayList<>();
        int truncated = 0;
        for (Document document : documents) {
            long[] source = encode(tokenizer, document.text(), model);
            long[] target = encode(tokenizer, document.target(), model);
            truncated += target.length > maxTarget ? 1 : 0;
            pairs.add(new Pair(cut(source, maxSource), cut(target, maxTarget)));
        }
        return new Seq2SeqExamples(pairs, model, truncated);
    }

    /**
     * Returns a text's ids as a source or target of the model: the tokenizer's, ending with the
     * end-of-sequence id (appended where the tokenizer adds none), not cut.
     *
     * @param tokenizer the model's tokenizer
     * @param text the text
     * @param model the model's configuration
     * @return the ids
     * @throws IllegalArgumentException if an id is outside the model's vocabulary
     */
    public static long[] encode(
            HuggingFaceTokenizer tokenizer, String text, EncoderDecoderConfig model) {
        long eos = model.eosTokenId();
        long[] encoded = tokenizer.encode(text).getIds();
        boolean ended = encoded.length > 0 && encoded[encoded.length - 1] == eos;
        long[] ids = ended ? encoded : Arrays.copyOf(encoded, encoded.length + 1);
        ids[ids.length - 1] = eos;
        Sequences.checkIds(ids, model.vocabSize());
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
        long[][] inputs = pad(indices, true, model.padTokenId());
        long[][] mask = new long[inputs.length][inputs.length == 0 ? 0 : inputs[0].length];
        for (int row = 0; row < indices.length; row++) {
            Arrays.fill(mask[row], 0, pairs.get(indices[row]).source().length, 1);
        }
        return new NDList(create(manager, inputs), create(manager, mask));
    }

    @Override
    public LabeledBatch batch(NDManager manager, int[] indices) {
        NDList inputs = sources(manager, indices);
        NDArray labels = create(manager, pad(indices, false, CausalLmLoss.IGNORE));
        inputs.add(model.shiftRight(labels));
        return new LabeledBatch(inputs, labels);
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
