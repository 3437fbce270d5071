package ai.djl.fsdp.zoo.chat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tokenizer.json}'s vocabulary in both of its shapes, a map of piece to id (BPE) and a
 * Unigram list of {@code [piece, score]} pairs (T5, Flan-T5): its size, the chat markers added
 * after it, and an added token's id that the vocabulary gives to another piece, named.
 */
class TokenizerJsonTest {

    @TempDir Path dir;

    @Test
    void aUnigramVocabularyIsSizedAndGrownByTheChatMarkers() throws IOException {
        Path unigram = TestModels.unigramTokenizer(dir.resolve("unigram.json"));
        JsonObject root = JsonParser.parseString(Files.readString(unigram)).getAsJsonObject();
        assertEquals(48, TokenizerJson.size(root, unigram));
        assertEquals("</s>", TokenizerJson.vocabulary(root, unigram).get(1));
        assertEquals(" was", TokenizerJson.vocabulary(root, unigram).get(47));

        Path plain = dir.resolve("plain.json");
        assertEquals(48, ChatTemplate.writeTokenizer(unigram, plain, false));
        Path chat = dir.resolve("chat.json");
        assertEquals(50, ChatTemplate.writeTokenizer(unigram, chat, true));
        Tokenizers.checkAddedTokens(chat, "--tokenizer_name");
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(chat, "--tokenizer_name")) {
            assertArrayEquals(new long[] {48}, tokenizer.encode(ChatTemplate.START).getIds());
            assertArrayEquals(new long[] {49}, tokenizer.encode(ChatTemplate.END).getIds());
            assertArrayEquals(new long[] {46, 47}, tokenizer.encode("the was").getIds());
        }
    }

    @Test
    void aMapVocabularyIsSizedAsBefore() throws IOException {
        Path bpe = dir.resolve("byte-level.json");
        ByteLevelTokenizer.write(bpe);
        assertEquals(
                ByteLevelTokenizer.VOCAB_SIZE,
                ChatTemplate.writeTokenizer(bpe, dir.resolve("copy.json"), false));
        assertEquals(
                ByteLevelTokenizer.VOCAB_SIZE + 2,
                ChatTemplate.writeTokenizer(bpe, dir.resolve("chat.json"), true));
    }

    @Test
    void anAddedTokenOnAUnigramPieceIsNamed() throws IOException {
        Path unigram = TestModels.unigramTokenizer(dir.resolve("tokenizer.json"));
        JsonObject root = JsonParser.parseString(Files.readString(unigram)).getAsJsonObject();
        root.getAsJsonArray("added_tokens").add(TokenizerJson.addedToken(4, "<extra_id_0>"));
        Files.writeString(unigram, root.toString());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> Tokenizers.checkAddedTokens(unigram, "--tokenizer_name"));
        assertEquals(
                "--tokenizer_name "
                        + unigram
                        + ": added token \"<extra_id_0>\" has id 4, which the tokenizer also gives"
                        + " to \"a\", so the two would share one embedding row; give the added"
                        + " token an id of its own (the first free id is 48)",
                e.getMessage());
    }

    @Test
    void aVocabularyOfNeitherShapeIsNamed() throws IOException {
        Path broken = dir.resolve("broken.json");
        Files.writeString(broken, "{\"model\": {\"type\": \"BPE\", \"vocab\": 7}}");
        Path copy = dir.resolve("out.json");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ChatTemplate.writeTokenizer(broken, copy, true));
        assertEquals(
                broken
                        + ": model.vocab is neither a map of piece to id (BPE, WordPiece,"
                        + " WordLevel) nor a list of [piece, score] pairs (Unigram): pass a"
                        + " complete tokenizer.json",
                e.getMessage());
    }
}
