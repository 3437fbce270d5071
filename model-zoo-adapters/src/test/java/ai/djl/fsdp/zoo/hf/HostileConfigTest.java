package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile {@code config.json} and {@code tokenizer.json} files: each gives one message that names
 * the file, the key or the flag, and what the value must be.
 */
class HostileConfigTest {

    @TempDir Path dir;

    /** Writes GPT-2's config with one key changed to a raw JSON value and reads it. */
    private IllegalArgumentException refusal(String key, String rawValue) throws IOException {
        JsonObject json = GPT2Config.of(2, 64, 4, 256).toJson();
        String text = ConfigJson.GSON.toJson(json);
        String pattern = "\"" + key + "\": ";
        int at = text.indexOf(pattern) + pattern.length();
        int end = text.indexOf(',', at);
        Path file = dir.resolve(ConfigJson.FILE);
        Files.writeString(file, text.substring(0, at) + rawValue + text.substring(end));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.read(dir));
        assertEquals(null, e.getCause(), "one message, not a chain");
        return e;
    }

    @Test
    void aValueOfTheWrongTypeNamesTheKeyOnce() throws IOException {
        assertEquals(
                dir.resolve(ConfigJson.FILE)
                        + ": \"n_head\" must be a positive integer (at most 2147483647), got"
                        + " \"four\"",
                refusal("n_head", "\"four\"").getMessage());
        assertTrue(
                refusal("layer_norm_epsilon", "\"small\"")
                        .getMessage()
                        .endsWith("\"layer_norm_epsilon\" must be a finite number, got \"small\""));
        assertTrue(
                refusal("tie_word_embeddings", "1")
                        .getMessage()
                        .endsWith("\"tie_word_embeddings\" must be true or false, got 1"));
        assertTrue(
                refusal("eos_token_id", "[50256, \"x\"]")
                        .getMessage()
                        .endsWith("\"eos_token_id\" must be a non-negative integer, got \"x\""));
    }

    @Test
    void sizesMustBePositiveAndFitAnInt() throws IOException {
        assertTrue(
                refusal("vocab_size", "1e12")
                        .getMessage()
                        .endsWith(
                                "\"vocab_size\" must be a positive integer (at most 2147483647),"
                                        + " got 1e12"));
        assertTrue(
                refusal("n_embd", "-64")
                        .getMessage()
                        .endsWith(
                                "\"n_embd\" must be a positive integer (at most 2147483647), got"
                                        + " -64"));
        assertTrue(refusal("n_layer", "2.5").getMessage().contains("\"n_layer\" must be"));
        assertTrue(refusal("n_layer", "1e999999999").getMessage().contains("\"n_layer\" must be"));
        // An integral number in another notation is accepted, as Python's json reads it.
        JsonObject json = GPT2Config.of(2, 64, 4, 256).toJson();
        json.add("n_layer", new JsonPrimitive(new java.math.BigDecimal("3.0")));
        assertEquals(3, ModelFamilies.parse(json).numLayers());
    }

    @Test
    void brokenJsonSaysWhereWithoutTheParsersAdvice() throws IOException {
        Path file = dir.resolve(ConfigJson.FILE);
        Files.writeString(file, "{\"model_type\": \"gpt2\", \"n_head\": ");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.read(file));
        assertEquals(
                file
                        + " is not valid JSON: the text ends early (truncated?) at line 1 column"
                        + " 34: pass a Hugging Face model directory whose config.json is intact",
                e.getMessage());
        Files.writeString(file, "[1, 2]");
        e = assertThrows(IllegalArgumentException.class, () -> ModelFamilies.read(file));
        assertTrue(e.getMessage().startsWith(file + " is not a JSON object"), e.getMessage());
        Files.writeString(file, "{\"model_type\": 2}");
        e = assertThrows(IllegalArgumentException.class, () -> ModelFamilies.read(file));
        assertTrue(e.getMessage().contains("\"model_type\" is missing or not a string"));
        Files.write(file, new byte[] {'{', (byte) 0xff, '}'});
        e = assertThrows(IllegalArgumentException.class, () -> ModelFamilies.read(file));
        assertTrue(e.getMessage().startsWith(file + " is not UTF-8 text"), e.getMessage());
    }

    @Test
    void aTruncatedTokenizerNamesTheFileAndTheFlag() throws IOException {
        byte[] whole = Files.readAllBytes(TestModels.sharedData("gpt2-tokenizer.json"));
        Path file = dir.resolve(Tokenizers.FILE);
        Files.write(file, Arrays.copyOf(whole, 200_000));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> Tokenizers.load(file, "--tokenizer_name").close());
        assertTrue(
                e.getMessage().startsWith(file + " is not a valid Hugging Face tokenizer.json ("),
                e.getMessage());
        assertTrue(e.getMessage().contains("EOF while parsing"), e.getMessage());
        assertTrue(
                e.getMessage().endsWith("): pass a complete tokenizer.json with --tokenizer_name"),
                e.getMessage());
        assertEquals(null, e.getCause());
    }
}
