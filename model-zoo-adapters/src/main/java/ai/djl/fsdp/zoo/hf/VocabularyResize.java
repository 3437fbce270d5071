package ai.djl.fsdp.zoo.hf;

/**
 * How a checkpoint's vocabulary grows as it loads, as Hugging Face's {@code
 * resize_token_embeddings(n, pad_to_multiple_of)} grows it: the token embedding (and an untied
 * head) keep their stored rows and gain rows up to the new size. With mean resizing (transformers'
 * default since 4.46) each new row is drawn from the normal distribution with the stored rows' mean
 * and their covariance scaled by {@code 1e-9}, or is the mean where that covariance is not positive
 * definite; the head's new rows from the head's stored rows alike. Without it they are drawn from
 * the normal distribution of mean 0 and standard deviation {@code initializer_range}. The draws
 * depend on the seed and the parameter's name only, so every rank and every number of ranks makes
 * the same rows.
 */
public final class VocabularyResize {

    private final int storedRows;
    private final int rows;
    private final boolean meanResizing;
    private final float initializerRange;
    private final long seed;

    private VocabularyResize(
            int storedRows, int rows, boolean meanResizing, float initializerRange, long seed) {
        this.storedRows = storedRows;
        this.rows = rows;
        this.meanResizing = meanResizing;
        this.initializerRange = initializerRange;
        this.seed = seed;
    }

    /**
     * Returns the growth of a vocabulary of {@code storedRows} to {@code rows}.
     *
     * @param storedRows the checkpoint's vocabulary size
     * @param rows the new size, larger
     * @param meanResizing true to draw new rows around the stored rows' mean (transformers'
     *     default), false to draw them from the normal distribution of {@code initializerRange}
     * @param initializerRange the standard deviation of fresh weights ({@code initializer_range})
     * @param seed the seed of the draws
     * @return the growth
     * @throws IllegalArgumentException if {@code rows} is not larger than {@code storedRows}
     */
    public static VocabularyResize of(
            int storedRows, int rows, boolean meanResizing, float initializerRange, long seed) {
        if (storedRows <= 0 || rows <= storedRows) {
            throw new IllegalArgumentException(
                    "a vocabulary grows from a positive size to a larger one, not from "
                            + storedRows
                            + " to "
                            + rows);
        }
        return new VocabularyResize(storedRows, rows, meanResizing, initializerRange, seed);
    }

    /**
     * Returns the size a vocabulary of {@code tokens} tokens is given, rounded up to a multiple of
     * {@code multiple} as {@code resize_token_embeddings(n, pad_to_multiple_of)} rounds it.
     *
     * @param tokens the tokenizer's size
     * @param multiple the multiple, positive
     * @return the padded size
     * @throws IllegalArgumentException if the multiple is not positive or the padded size exceeds
     *     an int
     */
    public static int paddedSize(int tokens, int multiple) {
        if (multiple <= 0) {
            throw new IllegalArgumentException(
                    "--pad_to_multiple_of must be positive (the vocabulary is rounded up to a"
                            + " multiple of it; 1 for none), got "
                            + multiple);
        }
        long padded = (tokens + (long) multiple - 1) / multiple * multiple;
        if (padded > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "a vocabulary of "
                            + tokens
                            + " tokens rounded up to a multiple of "
                            + multiple
                            + " exceeds an embedding's "
                            + Integer.MAX_VALUE
                            + " rows: give a smaller --pad_to_multiple_of");
        }
        return (int) padded;
    }

    /**
     * Returns the checkpoint's vocabulary size.
     *
     * @return the stored rows
     */
    public int getStoredRows() {
        return storedRows;
    }

    /**
     * Returns the vocabulary size after growing.
     *
     * @return the rows
     */
    public int getRows() {
        return rows;
    }

    /**
     * Returns whether new rows are drawn around the stored rows' mean.
     *
     * @return true for mean resizing
     */
    public boolean isMeanResizing() {
        return meanResizing;
    }

    /**
     * Returns the standard deviation new rows are drawn with without mean resizing.
     *
     * @return {@code initializer_range}
     */
    public float getInitializerRange() {
        return initializerRange;
    }

    /**
     * Returns the seed of the draws.
     *
     * @return the seed
     */
    public long getSeed() {
        return seed;
    }

    /** {@inheritDoc} */
    @Override
    public String toString() {
        return "the vocabulary grows from "
                + storedRows
                + " to "
                + rows
                + " rows, new rows "
                + (meanResizing
                        ? "drawn around the stored rows' mean (mean resizing)"
                        : "drawn from a normal of std " + initializerRange);
    }
}
