package ai.djl.fsdp.zoo.chat;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Hugging Face's tokenizer files ({@code tokenizer.json}, {@code tokenizer_config.json}) as JSON:
 * an added special token in their form, and a file written whole through a temporary name.
 */
public final class TokenizerJson {

    private TokenizerJson() {}

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
        Path temporary = Files.createTempFile(file.toAbsolutePath().getParent(), ".tok", ".json");
        Files.writeString(
                temporary,
                new GsonBuilder().setPrettyPrinting().create().toJson(json),
                StandardCharsets.UTF_8);
        Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING);
    }
}
