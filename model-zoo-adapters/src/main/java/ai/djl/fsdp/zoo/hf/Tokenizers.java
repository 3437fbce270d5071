package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.zoo.chat.TokenizerJson;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

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

    /**
     * Checks that each of a {@code tokenizer.json}'s added tokens has an id of its own. An id that
     * the vocabulary (or an earlier added token) gives to other text would make two tokens share
     * one embedding row, and a vocabulary grown to the tokenizer's size would be short of a row.
     *
     * @param file the {@code tokenizer.json}
     * @param flag the command-line flag that names the tokenizer, for messages
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException naming the token, its id, the other token and the fix
     */
    public static void checkAddedTokens(Path file, String flag) throws IOException {
        JsonObject root =
                JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8))
                        .getAsJsonObject();
        Map<Integer, String> textById = new HashMap<>(TokenizerJson.vocabulary(root, file));
        JsonElement added = root.get("added_tokens");
        if (added == null || !added.isJsonArray()) {
            return;
        }
        int free = TokenizerJson.size(root, file);
        for (JsonElement element : added.getAsJsonArray()) {
            JsonObject token = element.getAsJsonObject();
            int id = token.get("id").getAsInt();
            String content = token.get("content").getAsString();
            String other = textById.putIfAbsent(id, content);
            if (other != null && !other.equals(content)) {
                throw new IllegalArgumentException(
                        flag
                                + " "
                                + file
                                + ": added token \""
                                + content
                                + "\" has id "
                                + id
                                + ", which the tokenizer also gives to \""
                                + other
                                + "\", so the two would share one embedding row; give the added"
                                + " token an id of its own (the first free id is "
                                + free
                                + ")");
            }
        }
    }
}
