package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.fsdp.zoo.chat.ChatFormat;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.CharSpan;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Documents tokenized into training sequences of inputs and next-token labels. Labels that are not
 * trained on (padding; with completion-only loss, everything but the assistant's replies) are
 * {@link CausalLmLoss#IGNORE}. With packing, all documents form one token stream cut into blocks of
 * {@code maxSeqLen} (Hugging Face's {@code group_texts}): every token but the stream's first is a
 * label exactly once, the last block may be shorter. {@link Packing#CROSSING} lets attention run
 * across document boundaries within a block; {@link Packing#PER_DOCUMENT} (padding-free packing)
 * gives each block's tokens their document ids 1, 2, 3, ... (a document cut at a block's end
 * continues as the next block's first), which the model's attention mask keeps apart (attention and
 * position ids stay inside each document), and the last token of a document is not trained to
 * predict the next document's first. Without packing, each document is one sequence, cut at {@code
 * maxSeqLen}.
 */
public final class Sequences {

    /** Text is encoded in pieces of about this many characters, cut at line ends. */
    private static final int PIECE_CHARS = 1 << 16;

    /** How documents become sequences. */
    public enum Packing {
        /** One sequence per document. */
        NONE,
        /** One token stream cut into blocks; attention crosses documents within a block. */
        CROSSING,
        /** One token stream cut into blocks; attention stays inside each document. */
        PER_DOCUMENT
    }

    /**
     * One sequence.
     *
     * @param inputs the input token ids
     * @param labels the next token of each input, or {@link CausalLmLoss#IGNORE}
     * @param documents each input's document id within the sequence (1, 2, ...), or null when the
     *     sequence is one document or attention may cross documents
     */
    public record Sequence(long[] inputs, long[] labels, long[] documents) {}

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
     * @param packing whether and how to pack the documents into one stream
     * @param format how conversations become text
     * @param completionOnly whether only the assistant's replies are trained on
     * @param concatToken the token appended after each text document, or -1 for none
     * @param vocabSize the model's vocabulary: every id must be below it
     * @return the sequences
     */
    public static Sequences tokenize(
            List<Document> documents,
            HuggingFaceTokenizer tokenizer,
            int maxSeqLen,
            Packing packing,
            ChatFormat format,
            boolean completionOnly,
            long concatToken,
            int vocabSize) {
        List<Sequence> out = new ArrayList<>();
        TokenStream stream = new TokenStream();
        int truncated = 0;
        for (Document document : documents) {
            TokenStream tokens = packing != Packing.NONE ? stream : new TokenStream();
            tokens.documents++;
            if (document.isChat()) {
                tokens.addChat(
                        tokenizer,
                        format.render(document.messages(), document.tools(), completionOnly),
                        completionOnly);
            } else {
                tokens.add(tokenizer, document.text(), true);
                if (concatToken >= 0) {
                    tokens.add(new long[] {concatToken}, true);
                }
            }
            if (packing == Packing.NONE) {
                truncated += tokens.count > maxSeqLen + 1 ? 1 : 0;
                tokens.cut(out, maxSeqLen, true, false);
            }
        }
        if (packing != Packing.NONE) {
            stream.cut(out, maxSeqLen, false, packing == Packing.PER_DOCUMENT);
        }
        for (Sequence sequence : out) {
            checkIds(sequence.inputs(), vocabSize);
        }
        return new Sequences(out, truncated);
    }

    /** Checks that every id is in the model's vocabulary, else names the tokenizer. */
    static void checkIds(long[] ids, int vocabSize) {
        for (long id : ids) {
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
            count += countLabels(sequence);
        }
        return count;
    }

    /**
     * Returns the number of trained labels of the sequences at {@code indices}: those of their
     * {@link #batch} (padding is never trained), counted on the host.
     *
     * @param indices the sequences' indices
     * @return the number of labels that are not {@link CausalLmLoss#IGNORE}
     */
    public long countLabels(int[] indices) {
        long count = 0;
        for (int index : indices) {
            count += countLabels(sequences.get(index));
        }
        return count;
    }

    private static long countLabels(Sequence sequence) {
        long count = 0;
        for (long label : sequence.labels()) {
            count += label == CausalLmLoss.IGNORE ? 0 : 1;
        }
        return count;
    }

    /**
     * Stacks sequences into a batch padded to its longest: {@code inputIds [B, T]} and {@code
     * labels [B, T]} (int64), padding with {@code padId} and {@link CausalLmLoss#IGNORE}; with
     * per-document packing also the attention mask {@code [B, T]}: each token's document id, 0 for
     * padding.
     *
     * @param manager the manager of the arrays
     * @param indices which sequences
     * @param padId the input id of padding
     * @return the inputs, the labels and, with per-document packing, the attention mask
     */
    public NDList batch(NDManager manager, int[] indices, long padId) {
        int length = 0;
        for (int index : indices) {
            length = Math.max(length, sequences.get(index).inputs().length);
        }
        long[] inputs = new long[indices.length * length];
        long[] labels = new long[indices.length * length];
        long[] documents = new long[indices.length * length];
        boolean perDocument = false;
        Arrays.fill(inputs, padId);
        Arrays.fill(labels, CausalLmLoss.IGNORE);
        for (int row = 0; row < indices.length; row++) {
            Sequence sequence = sequences.get(indices[row]);
            int size = sequence.inputs().length;
            System.arraycopy(sequence.inputs(), 0, inputs, row * length, size);
            System.arraycopy(sequence.labels(), 0, labels, row * length, size);
            if (sequence.documents() != null) {
                perDocument = true;
                System.arraycopy(sequence.documents(), 0, documents, row * length, size);
            }
        }
        Shape shape = new Shape(indices.length, length);
        NDList batch = new NDList(manager.create(inputs, shape), manager.create(labels, shape));
        if (perDocument) {
            batch.add(manager.create(documents, shape));
        }
        return batch;
    }

    /**
     * Returns the model's inputs of a batch: the input ids, and the attention mask where the batch
     * has one.
     *
     * @param batch a result of {@link #batch}
     * @return {@code NDList(inputIds [, attentionMask])}
     */
    public static NDList modelInputs(NDList batch) {
        return batch.size() > 2 ? new NDList(batch.get(0), batch.get(2)) : new NDList(batch.get(0));
    }

    /**
     * Returns the sequences as the training loop reads them, padded with {@code padId}.
     *
     * @param padId the input id of padding
     * @return the training data
     */
    public TrainingData padded(long padId) {
        return new TrainingData() {
            @Override
            public int size() {
                return sequences.size();
            }

            @Override
            public long countLabels(int[] indices) {
                return Sequences.this.countLabels(indices);
            }

            @Override
            public LabeledBatch batch(NDManager manager, int[] indices) {
                NDList batch = Sequences.this.batch(manager, indices, padId);
                return new LabeledBatch(modelInputs(batch), batch.get(1));
            }
        };
    }

    /** Whether a token whose characters are {@code [start, end)} is trained on. */
    @FunctionalInterface
    private interface TokenLabels {
        boolean trained(int start, int end);
    }

    /** Token ids with, for each, whether it is trained on as a label and its document. */
    private static final class TokenStream {
        private long[] ids = new long[256];
        private boolean[] trained = new boolean[256];
        private int[] document = new int[256];
        private int count;
        private int documents;

        void add(HuggingFaceTokenizer tokenizer, String text, boolean train) {
            add(tokenizer, text, (start, end) -> train);
        }

        /**
         * Adds a rendered conversation encoded as one text, as {@code generate} encodes a prompt
         * (spans encoded apart would differ where a tokenizer prepends a word marker to each text,
         * as Llama 2's and Mistral's do); with {@code completionOnly}, a token is trained when one
         * of its characters is an assistant's, as transformers' assistant mask marks it.
         */
        void addChat(
                HuggingFaceTokenizer tokenizer,
                List<ChatTemplate.Span> spans,
                boolean completionOnly) {
            StringBuilder text = new StringBuilder();
            int[] spanEnds = new int[spans.size()];
            int codePoints = 0;
            for (int i = 0; i < spans.size(); i++) {
                String spanText = spans.get(i).text();
                text.append(spanText);
                codePoints += spanText.codePointCount(0, spanText.length());
                spanEnds[i] = codePoints;
            }
            // assistantBefore[c]: how many of the first c characters are an assistant's.
            int[] assistantBefore = new int[codePoints + 1];
            int at = 0;
            for (int i = 0; i < spans.size(); i++) {
                int step = spans.get(i).assistant() ? 1 : 0;
                for (; at < spanEnds[i]; at++) {
                    assistantBefore[at + 1] = assistantBefore[at] + step;
                }
            }
            int last = codePoints;
            add(
                    tokenizer,
                    text.toString(),
                    (start, end) ->
                            !completionOnly
                                    || assistantBefore[Math.min(last, Math.max(end, start + 1))]
                                            > assistantBefore[Math.min(last, start)]);
        }

        /**
         * Encodes {@code text} in pieces cut at line ends; {@code labels} says from each token's
         * characters (Unicode code points of {@code text}, as the tokenizer counts them) whether it
         * is trained on.
         */
        private void add(HuggingFaceTokenizer tokenizer, String text, TokenLabels labels) {
            int start = 0;
            int startCodePoint = 0;
            while (start < text.length()) {
                int end = Math.min(text.length(), start + PIECE_CHARS);
                int lineEnd = text.indexOf('\n', end);
                end = end == text.length() || lineEnd < 0 ? text.length() : lineEnd + 1;
                String piece = text.substring(start, end);
                Encoding encoding = tokenizer.encode(piece);
                CharSpan[] characters = encoding.getCharTokenSpans();
                boolean[] train = new boolean[characters.length];
                int past = 0;
                for (int i = 0; i < train.length; i++) {
                    // A token of no characters (one the tokenizer adds) takes its place's label.
                    int first = characters[i] == null ? past : characters[i].getStart();
                    past = characters[i] == null ? past : characters[i].getEnd();
                    train[i] = labels.trained(startCodePoint + first, startCodePoint + past);
                }
                add(encoding.getIds(), train);
                startCodePoint += piece.codePointCount(0, piece.length());
                start = end;
            }
        }

        void add(long[] encoded, boolean train) {
            boolean[] trains = new boolean[encoded.length];
            Arrays.fill(trains, train);
            add(encoded, trains);
        }

        private void add(long[] encoded, boolean[] train) {
            if (count + encoded.length > ids.length) {
                int size = Math.max(ids.length * 2, count + encoded.length);
                ids = Arrays.copyOf(ids, size);
                trained = Arrays.copyOf(trained, size);
                document = Arrays.copyOf(document, size);
            }
            System.arraycopy(encoded, 0, ids, count, encoded.length);
            System.arraycopy(train, 0, trained, count, encoded.length);
            Arrays.fill(document, count, count + encoded.length, documents);
            count += encoded.length;
        }

        /**
         * Cuts into sequences of at most {@code length} inputs; {@code once}: the first only;
         * {@code perDocument}: with document ids, and no label across a document boundary.
         */
        void cut(List<Sequence> out, int length, boolean once, boolean perDocument) {
            for (int start = 0; start + 1 < count; start += length) {
                int inputs = Math.min(length, count - 1 - start);
                long[] labels = new long[inputs];
                long[] documentIds = perDocument ? new long[inputs] : null;
                for (int i = 0; i < inputs; i++) {
                    int at = start + i;
                    boolean crosses = perDocument && document[at + 1] != document[at];
                    labels[i] = trained[at + 1] && !crosses ? ids[at + 1] : CausalLmLoss.IGNORE;
                    if (perDocument) {
                        boolean first = i == 0 || document[at] != document[at - 1];
                        documentIds[i] = (i == 0 ? 0 : documentIds[i - 1]) + (first ? 1 : 0);
                    }
                }
                long[] tokens = Arrays.copyOfRange(ids, start, start + inputs);
                out.add(new Sequence(tokens, labels, documentIds));
                if (once) {
                    return;
                }
            }
        }
    }
}
