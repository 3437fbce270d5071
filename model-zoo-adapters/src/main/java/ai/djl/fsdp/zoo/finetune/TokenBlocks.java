package ai.djl.fsdp.zoo.finetune;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.ArrayDataset;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A plain-text corpus tokenized and packed into fixed-length blocks for causal language modelling,
 * as Hugging Face's {@code run_clm} groups texts: the token stream is cut into blocks of {@code
 * seqLen} inputs, and each block's labels are the same tokens shifted by one (the last label is the
 * next block's first token), so every token but the first is predicted exactly once.
 */
public final class TokenBlocks {

    /** Text is encoded in pieces of about this many characters, cut at line ends. */
    private static final int PIECE_CHARS = 1 << 16;

    private final long[] tokens;
    private final int seqLen;

    private TokenBlocks(long[] tokens, int seqLen) {
        this.tokens = tokens;
        this.seqLen = seqLen;
    }

    /**
     * Tokenizes {@code text} until {@code maxBlocks} blocks are filled or the text ends. Reading
     * stops early so a short run over a large corpus does not tokenize all of it.
     *
     * @param tokenizer the tokenizer (no special tokens added)
     * @param text a UTF-8 plain-text file
     * @param seqLen the tokens per block
     * @param maxBlocks the most blocks wanted
     * @param vocabSize the model's vocabulary: every token id must be below it
     * @return the blocks
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException if the text fills no block, or the tokenizer produces ids
     *     the model's embedding does not have
     */
    public static TokenBlocks read(
            HuggingFaceTokenizer tokenizer, Path text, int seqLen, long maxBlocks, int vocabSize)
            throws IOException {
        long wanted = Math.min(Integer.MAX_VALUE - 8, maxBlocks * seqLen + 1);
        long[] ids = new long[1 << 16];
        int count = 0;
        try (BufferedReader reader = Files.newBufferedReader(text, StandardCharsets.UTF_8)) {
            StringBuilder piece = new StringBuilder();
            String line;
            while (count < wanted) {
                line = reader.readLine();
                if (line != null) {
                    piece.append(line).append('\n');
                }
                if (piece.length() >= PIECE_CHARS || (line == null && piece.length() > 0)) {
                    long[] encoded = tokenizer.encode(piece.toString()).getIds();
                    piece.setLength(0);
                    if (count + encoded.length > ids.length) {
                        ids = Arrays.copyOf(ids, Math.max(ids.length * 2, count + encoded.length));
                    }
                    System.arraycopy(encoded, 0, ids, count, encoded.length);
                    count += encoded.length;
                }
                if (line == null) {
                    break;
                }
            }
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(
                    "--dataset "
                            + text
                            + " is not UTF-8 text (it holds a byte sequence UTF-8 does not allow;"
                            + " a binary file?): pass a plain-text file, or convert it, e.g. with"
                            + " iconv -f LATIN1 -t UTF-8");
        }
        long[] tokens = Arrays.copyOf(ids, (int) Math.min(count, wanted));
        for (long id : tokens) {
            if (id < 0 || id >= vocabSize) {
                throw new IllegalArgumentException(
                        "the tokenizer produced token id "
                                + id
                                + " but the model's vocabulary has "
                                + vocabSize
                                + " tokens: use the model's own tokenizer (--tokenizer_name)");
            }
        }
        TokenBlocks blocks = new TokenBlocks(tokens, seqLen);
        if (blocks.size() == 0) {
            throw new IllegalArgumentException(
                    text
                            + " holds "
                            + tokens.length
                            + " tokens, fewer than one block of --max_seq_len "
                            + seqLen
                            + " plus one: use a larger text or a shorter --max_seq_len");
        }
        return blocks;
    }

    /** Returns the number of full blocks. */
    public int size() {
        return (int) Math.max(0, (tokens.length - 1) / seqLen);
    }

    /**
     * Returns the blocks as a dataset of {@code inputIds [seqLen]} to {@code labels [seqLen]}
     * (int64), read in order in batches of {@code batchSize}; an incomplete last batch is dropped
     * so every rank gets an equal slice of every batch.
     *
     * @param manager the manager of the arrays
     * @param batchSize the global batch size
     * @return the dataset
     */
    public ArrayDataset toDataset(NDManager manager, int batchSize) {
        int blocks = size();
        if (blocks < batchSize) {
            throw new IllegalArgumentException(
                    "the text fills "
                            + blocks
                            + " blocks of "
                            + seqLen
                            + " tokens, fewer than one global batch of "
                            + batchSize
                            + ": use a larger text, a shorter --max_seq_len or a smaller"
                            + " --per_device_train_batch_size");
        }
        NDArray stream = manager.create(Arrays.copyOf(tokens, blocks * seqLen + 1));
        NDArray inputs =
                stream.get(new NDIndex("0:{}", blocks * seqLen)).reshape(new Shape(blocks, seqLen));
        NDArray labels =
                stream.get(new NDIndex("1:{}", blocks * seqLen + 1))
                        .reshape(new Shape(blocks, seqLen));
        return new ArrayDataset.Builder()
                .setData(inputs)
                .optLabels(labels)
                .setSampling(batchSize, false, true)
                .build();
    }
}
