package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.fsdp.zoo.TestModels;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class TokenizerTest {

    @Test
    void encodesGpt2TokensOffline() throws IOException {
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(TestModels.sharedData("gpt2-tokenizer.json"))) {
            assertArrayEquals(new long[] {15496, 995}, tokenizer.encode("Hello world").getIds());
            assertEquals(50256L, tokenizer.encode("<|endoftext|>").getIds()[0]);
            assertEquals("Hello world", tokenizer.decode(new long[] {15496, 995}));
        }
    }
}
