package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.TestModels;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

class TokenizerTest {

    @Test
    void encodesGpt2TokensOffline() throws IOException {
        try (HuggingFaceTokenizer tokenizer =
                Tokenizers.load(TestModels.sharedData("gpt2-tokenizer.json"), "--tokenizer_name")) {
            assertArrayEquals(new long[] {15496, 995}, tokenizer.encode("Hello world").getIds());
            assertEquals(50256L, tokenizer.encode("<|endoftext|>").getIds()[0]);
            assertEquals("Hello world", tokenizer.decode(new long[] {15496, 995}));
        }
    }

    @Test
    void longTextsAreNotTruncated() throws IOException {
        String text = Files.readString(TestModels.sharedData("kjv.txt")).substring(0, 20_000);
        try (HuggingFaceTokenizer tokenizer =
                Tokenizers.load(TestModels.sharedData("gpt2-tokenizer.json"), "--tokenizer_name")) {
            long[] ids = tokenizer.encode(text).getIds();
            assertTrue(ids.length > 4000, "got only " + ids.length + " tokens");
            assertEquals(text, tokenizer.decode(ids));
        }
    }
}
