package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chat template's tokens, packing and completion-only labels, with the project's byte-level
 * tokenizer: no token is lost or duplicated, and only the assistant's replies are trained on.
 */
class SequencesTest {

    private static List<Document> chats() {
        return ArithmeticChat.generate(30, 5, 1).get("train");
    }

    @Test
    void chatTemplateTokensAreSingleSpecialTokens(@TempDir Path directory) throws Exception {
        Path base = directory.resolve("base.json");
        ByteLevelTokenizer.write(base);
        Path chat = directory.resolve("tokenizer.json");
        assertEquals(259, ChatTemplate.writeTokenizer(base, chat, true));
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(chat, "--tokenizer_name")) {
            long[] ids = tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n").getIds();
            assertEquals(257, ids[0]);
            assertEquals(258, ids[ids.length - 2]);
            assertEquals(
                    "Convert 7 km", tokenizer.decode(tokenizer.encode("Convert 7 km").getIds()));
        }
        assertEquals(259, ChatTemplate.writeTokenizer(chat, directory.resolve("again.json"), true));
    }

    @Test
    void packingLosesAndDuplicatesNoToken(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("tokenizer.json");
        ByteLevelTokenizer.write(directory.resolve("base.json"));
        ChatTemplate.writeTokenizer(directory.resolve("base.json"), file, true);
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name")) {
            List<Long> stream = new ArrayList<>();
            for (Document document : chats()) {
                StringBuilder text = new StringBuilder();
                ChatTemplate.render(document.messages()).forEach(s -> text.append(s.text()));
                for (long id : tokenizer.encode(text.toString()).getIds()) {
                    stream.add(id);
                }
            }
            Sequences packed =
                    Sequences.tokenize(
                            chats(),
                            tokenizer,
                            16,
                            Sequences.Packing.CROSSING,
                            ChatTemplate.CHATML,
                            false,
                            -1,
                            259);
            List<Long> inputs = new ArrayList<>();
            List<Long> labels = new ArrayList<>();
            for (Sequences.Sequence sequence : packed.getSequences()) {
                assertTrue(sequence.inputs().length <= 16);
                for (int i = 0; i < sequence.inputs().length; i++) {
                    inputs.add(sequence.inputs()[i]);
                    labels.add(sequence.labels()[i]);
                }
            }
            assertEquals(stream.subList(0, stream.size() - 1), inputs, "every input once");
            assertEquals(stream.subList(1, stream.size()), labels, "every next token once");
            assertEquals(stream.size() - 1, packed.countLabels());
        }
    }

    @Test
    void completionOnlyTrainsOnRepliesAlone(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("tokenizer.json");
        ByteLevelTokenizer.write(directory.resolve("base.json"));
        ChatTemplate.writeTokenizer(directory.resolve("base.json"), file, true);
        Document chat =
                Document.ofMessages(
                        List.of(
                                Map.of("role", "user", "content", "What is 2 + 2?"),
                                Map.of("role", "assistant", "content", "4")));
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name")) {
            Sequences sequences =
                    Sequences.tokenize(
                            List.of(chat),
                            tokenizer,
                            64,
                            Sequences.Packing.NONE,
                            ChatTemplate.CHATML,
                            true,
                            -1,
                            259);
            Sequences.Sequence only = sequences.getSequences().get(0);
            List<Long> trained = new ArrayList<>();
            for (long label : only.labels()) {
                if (label != CausalLmLoss.IGNORE) {
                    trained.add(label);
                }
            }
            long[] reply = tokenizer.encode("4<|im_end|>\n").getIds();
            assertEquals(reply.length, trained.size());
            for (int i = 0; i < reply.length; i++) {
                assertEquals(reply[i], trained.get(i));
            }
        }
    }
}
