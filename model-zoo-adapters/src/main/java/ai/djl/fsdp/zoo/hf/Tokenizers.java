package ai.djl.fsdp.zoo.hf;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Loads Hugging Face tokenizers through DJL. The tokenizers jar carries the native library for
 * Linux x86-64 and aarch64 and extracts it to {@code ~/.djl.ai}; nothing is downloaded.
 */
public final class Tokenizers {

    /** The file name of a model directory's tokenizer. */
    public static final String FILE = "tokenizer.json";

    private Tokenizers() {}

    /**
     * Loads a tokenizer that encodes text exactly: no special tokens added (a causal model's prompt
     * and training text are used as written) and no truncation (DJL otherwise cuts every encoding
     * at 512 tokens; callers chunk long text themselves).
     *
     * @param path a {@code tokenizer.json}, or a model directory holding one
     * @param flag the command-line flag that names the tokenizer, for messages
     * @return the tokenizer; close it when done
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException if the file is not a tokenizer, naming it and the flag
     */
    public static HuggingFaceTokenizer load(Path path, String flag) throws IOException {
        Path file = Files.isDirectory(path) ? path.resolve(FILE) : path;
        if (!Files.isRegularFile(file)) {
            throw new IOException(
                    "no tokenizer at " + file + ": pass a tokenizer.json with " + flag);
        }
        try {
            return HuggingFaceTokenizer.builder()
                    .optTokenizerPath(file)
                    .optAddSpecialTokens(false)
                    .optTruncation(false)
                    .build();
        } catch (RuntimeException e) {
            // The native library's reason, such as "EOF while parsing a value at line 1 column
            // 200000", says where the file breaks but not which file.
            IllegalArgumentException failure =
                    new IllegalArgumentException(
                            file
                                    + " is not a valid Hugging Face tokenizer.json ("
                                    + e.getMessage()
                                    + "): pass a complete tokenizer.json with "
                                    + flag);
            failure.addSuppressed(e);
            throw failure;
        }
    }
}
