package ai.djl.fsdp.zoo.chat;

import ai.djl.fsdp.safetensors.AtomicFiles;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Hugging Face's tokenizer files ({@code tokenizer.json}, {@code tokenizer_config.json}) as JSON:
 * the vocabulary of a {@code tokenizer.json} in either of its shapes and its size, an added special
 * token in their form, and a file written whole through a temporary name.
 */
public final class TokenizerJson {

    private TokenizerJson() {}

    /**
     * Returns the pieces of a {@code tokenizer.json}'s model vocabulary by id. BPE, WordPiece and
     * WordLevel models hold a map of piece to id; a Unigram model (T5, Flan-T5, ALBERT) a list of
     * {@code [piece, score]} pairs, each piece's id its position.
     *
     * @param root the {@code tokenizer.json} object
     * @param file the file, for messages
     * @return the pieces by id, in the file's order
     * @throws IllegalArgumentException naming the file if {@code model.vocab} has neither shape
     */
    public static Map<Integer, String> vocabulary(JsonObject root, Path file) {
        JsonElement model = root.get("model");
        JsonElement vocab =
                model != null && model.isJsonObject() ? model.getAsJsonObject().get("vocab") : null;
        Map<Integer, String> pieces = new LinkedHashMap<>();
        if (vocab != null && vocab.isJsonObject()) {
            for (Map.Entry<String, JsonElement> entry : vocab.getAsJsonObject().entrySet()) {
                pieces.put(entry.getValue().getAsInt(), entry.getKey());
            }
            return pieces;
        }
        if (vocab != null && vocab.isJsonArray()) {
            JsonArray list = vocab.getAsJsonArray();
            for (int id = 0; id < list.size(); id++) {
                JsonElement pair = list.get(id);
                if (!pair.isJsonArray() || pair.getAsJsonArray().isEmpty()) {
                    throw new IllegalArgumentException(
                            file + ": entry " + id + " of model.vocab is not [piece, score]");
                }
                pieces.put(id, pair.getAsJsonArray().get(0).getAsString());
            }
            return pieces;
        }
        throw new IllegalArgumentException(
                file
                        + ": model.vocab is neither a map of piece to id (BPE, WordPiece,"
                        + " WordLevel) nor a list of [piece, score] pairs (Unigram): pass a"
                        + " complete tokenizer.json");
    }

    /**
     * Returns the size of a {@code tokenizer.json}'s vocabulary: one past the highest id of its
     * model's vocabulary ({@link #vocabulary}) and of its added tokens.
     *
     * @param root the {@code tokenizer.json} object
     * @param file the file, for messages
     * @return the number of ids the tokenizer can produce
     * @throws IllegalArgumentException naming the file if {@code model.vocab} has neither shape
     */
    public static int size(JsonObject root, Path file) {
        int size = vocabulary(root, file).keySet().stream().mapToInt(i -> i + 1).max().orElse(0);
        JsonElement added = root.get("added_tokens");
        if (added != null && added.isJsonArray()) {
            for (JsonElement token : added.getAsJsonArray()) {
                size = Math.max(size, token.getAsJsonObject().get("id").getAsInt() + 1);
            }
        }
        return size;
    }

    /**
     * Returns a special token as {@code tokenizer_config.json} writes it: its text, or an
     * AddedToken object whose {@code content} is the text.
     *
     * @param element the value of a key such as {@code eos_token}, or null
     * @return the token's text, or null if there is none
     */
    public static String specialToken(JsonElement element) {
        if (element == null || element.isJsonNull()) {
            return null;
        }
        if (element.isJsonObject()) {
            return element.getAsJsonObject().get("content").getAsString();
        }
        return element.getAsString();
    }

    /**
     * Reads the {@code eos_token} of a {@code tokenizer_config.json}: the token that ends a
     * sequence, whose id is Hugging Face's {@code tokenizer.eos_token_id}.
     *
     * @param config the file
     * @return the token's text, or null if the file is absent or has no {@code eos_token}
     * @throws IOException if the file cannot be read
     */
    public static String eosToken(Path config) throws IOException {
        if (config == null || !Files.isRegularFile(config)) {
            return null;
        }
        JsonElement root = JsonParser.parseString(Files.readString(config, StandardCharsets.UTF_8));
        return root.isJsonObject() ? specialToken(root.getAsJsonObject().get("eos_token")) : null;
    }

    /**
     * Returns an entry of {@code added_tokens}: a special token, matched as written.
     *
     * @param id the token's id
     * @param content the token's text
     * @return the entry
     */
    public static JsonObject addedToken(int id, String content) {
        JsonObject token = new JsonObject();
        token.addProperty("id", id);
        token.addProperty("content", content);
        token.addProperty("single_word", false);
        token.addProperty("lstrip", false);
        token.addProperty("rstrip", false);
        token.addProperty("normalized", false);
        token.addProperty("special", true);
        return token;
    }

    /**
     * Writes a JSON file through a temporary name beside it, so a reader never sees half a file.
     *
     * @param json the content
     * @param file the file to write
     * @throws IOException if writing fails
     */
    public static void write(JsonObject json, Path file) throws IOException {
        AtomicFiles.writeString(file, new GsonBuilder().setPrettyPrinting().create().toJson(json));
    }
}
