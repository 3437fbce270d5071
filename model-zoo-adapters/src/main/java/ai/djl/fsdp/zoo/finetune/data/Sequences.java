package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Documents tokenized into training sequences of inputs and next-token labels. Labels that are not
 * trained on (padding; with completion-only loss, everything but the assistant's replies) are
 * {@link #IGNORE}. With packing, all documents form one token stream cut into blocks of {@code
 * maxSeqLen} (Hugging Face's {@code group_texts}): every token but the stream's first is a label
 * exactly once, the last block may be shorter, and attention runs across document boundaries within
 * a block. Without packing, each document is one sequence, cut at {@code maxSeqLen}.
 */
public final class Sequences {

    /** The label of a position that is not trained on. */
    public static final long IGNORE = -100;

    /** Text is encoded in pieces of about this many characters, cut at line ends. */
    private static final int PIECE_CHARS = 1 << 16;

    /**
     * One sequence.
     *
     * @param inputs the input token ids
     * @param labels the next token of each input, or {@link #IGNORE}
     */
    public record Sequence(long[] inputs, long[] labels) {}

    private final List<Sequence> sequences;
    private final int truncated;

    private Sequences(List<Sequence> sequences, int truncated) {
        this.sequences = sequences;
        this.truncated = truncated;
    }

    /**
     * Tokenizes documents.
     *
     * @param documents the documents
     * @param tokenizer the tokenizer (with the chat template's tokens for conversations)
     * @param maxSeqLen the most input tokens per sequence
     * @param packing whether to pack the documents into one stream
     * @param completionOnly whether only the assistant's replies are trained on
     * @param concatToken the token appended after each text document, or -1 for none
     * @param vocabSize the model's vocabulary: every id must be below it
     * @return the sequences
     */
    public static Sequences tokenize(
            List<Document> documents,
            HuggingFaceTokenizer tokenizer,
            int maxSeqLen,
            boolean packing,
            boolean completionOnly,
            long concatToken,
            int vocabSize) {
        List<Sequence> out = new ArrayList<>();
        TokenStream stream = new TokenStream();
        int truncated = 0;
        for (Document document : documents) {
            TokenStream tokens = packing ? stream : new TokenStream();
            if (document.isChat()) {
                for (ChatTemplate.Span span : ChatTemplate.render(document.messages())) {
                    tokens.add(tokenizer, span.text(), !completionOnly || span.assistant());
                }
            } else {
                tokens.add(tokenizer, document.text(), true);
                if (concatToken >= 0) {
                    tokens.add(new long[] {concatToken}, true);
                }
            }
            if (!packing) {
                truncated += tokens.count > maxSeqLen + 1 ? 1 : 0;
                tokens.cut(out, maxSeqLen, true);
            }
        }
        if (packing) {
            stream.cut(out, maxSeqLen, false);
        }
        for (Sequence sequence : out) {
            for (long id : sequence.inputs()) {
                if (id < 0 || id >= vocabSize) {
                    throw new IllegalArgumentException(
                            "the tokenizer produced token id "
                                    + id
                                    + " but the model's vocabulary has "
                                    + vocabSize
                                    + " tokens: use the model's own tokenizer (--tokenizer_name)");
                }
            }
        }
        return new Sequences(out, truncated);
    }

    /** Returns the sequences. */
    public List<Sequence> getSequences() {
        return sequences;
    }

    /** Returns how many documents were longer than {@code maxSeqLen} and cut. */
    public int getTruncated() {
        return truncated;
    }

    /** Returns the number of trained labels over all sequences. */
    public long countLabels() {
        long count = 0;
        for (Sequence sequence : sequences) {
            for (long label : sequence.labels()) {
                count += label == IGNORE ? 0 : 1;
            }
        }
        return count;
    }

    /**
     * Stacks sequences into a batch padded to its longest: {@code inputIds [B, T]} and {@code
     * labels [B, T]} (int64), padding with {@code padId} and {@link #IGNORE}.
     *
     * @param manager the manager of the arrays
     * @param indices which sequences
     * @param padId the input id of padding
     * @return the inputs and the labels
     */
    public NDList batch(NDManager manager, int[] indices, long padId) {
        int length = 0;
        for (int index : indices) {
            length = Math.max(length, sequences.get(index).inputs().length);
        }
        long[] inputs = new long[indices.length * length];
        long[] labels = new long[indices.length * length];
        Arrays.fill(inputs, padId);
        Arrays.fill(labels, IGNORE);
        for (int row = 0; row < indices.length; row++) {
            Sequence sequence = sequences.get(indices[row]);
            System.arraycopy(sequence.inputs(), 0, inputs, row * length, sequence.inputs().length);
            System.arraycopy(sequence.labels(), 0, labels, row * length, sequence.labels().length);
        }
        Shape shape = new Shape(indices.length, length);
        NDArray inputIds = manager.create(inputs, shape);
        NDArray labelIds = manager.create(labels, shape);
        return new NDList(inputIds, labelIds);
    }

    /** Token ids with, for each, whether it is trained on as a label. */
    private static final class TokenStream {
        private long[] ids = new long[256];
        private boolean[] trained = new boolean[256];
        private int count;

        void add(HuggingFaceTokenizer tokenizer, String text, boolean train) {
            int start = 0;
            while (start < text.length()) {
                int end = Math.min(text.length(), start + PIECE_CHARS);
                int lineEnd = text.indexOf('\n', end);
                end = end == text.length() || lineEnd < 0 ? text.length() : lineEnd + 1;
                add(tokenizer.encode(text.substring(start, end)).getIds(), train);
                start = end;
            }
        }

        void add(long[] encoded, boolean train) {
            if (count + encoded.length > ids.length) {
                int size = Math.max(ids.length * 2, count + encoded.length);
                ids = Arrays.copyOf(ids, size);
                trained = Arrays.copyOf(trained, size);
            }
            System.arraycopy(encoded, 0, ids, count, encoded.length);
            Arrays.fill(trained, count, count + encoded.length, train);
            count += encoded.length;
        }

        /** Cuts into sequences of at most {@code length} inputs; {@code once}: the first only. */
        void cut(List<Sequence> out, int length, boolean once) {
            for (int start = 0; start + 1 < count; start += length) {
                int inputs = Math.min(length, count - 1 - start);
                long[] labels = new long[inputs];
                for (int i = 0; i < inputs; i++) {
                    labels[i] = trained[start + i + 1] ? ids[start + i + 1] : IGNORE;
                }
                out.add(new Sequence(Arrays.copyOfRange(ids, start, start + inputs), labels));
                if (once) {
                    return;
                }
            }
        }
    }
}
