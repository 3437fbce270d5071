package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.chat.ChatFormat;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
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

    /**
     * A tokenizer that prepends a word marker to every text it encodes (as Llama 2's and Mistral's
     * do) sees a conversation once, as {@code generate} encodes a prompt: no marker where a reply
     * starts, and only the reply's tokens trained on.
     */
    @Test
    void aConversationIsEncodedAsOneText(@TempDir Path directory) throws Exception {
        Path file = directory.resolve("tokenizer.json");
        StringBuilder vocab = new StringBuilder("\"</s>\": 0, \"\u2581\": 1");
        String letters = "[]/INSThiok<>s";
        for (int i = 0; i < letters.length(); i++) {
            vocab.append(", \"").append(letters.charAt(i)).append("\": ").append(i + 2);
        }
        Files.writeString(
                file,
                "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
                        + " \"added_tokens\": [{\"id\": 0, \"content\": \"</s>\","
                        + " \"single_word\": false, \"lstrip\": false, \"rstrip\": false,"
                        + " \"normalized\": false, \"special\": true}],"
                        + " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": ["
                        + "{\"type\": \"Prepend\", \"prepend\": \"\u2581\"},"
                        + " {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"},"
                        + " \"content\": \"\u2581\"}]},"
                        + " \"pre_tokenizer\": null, \"post_processor\": null, \"decoder\": null,"
                        + " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null,"
                        + " \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
                        + " \"fuse_unk\": false, \"byte_fallback\": false, \"vocab\": {"
                        + vocab
                        + "}, \"merges\": []}}");
        List<ChatTemplate.Span> spans =
                List.of(
                        new ChatTemplate.Span("[INST] hi [/INST]", false),
                        new ChatTemplate.Span(" ok</s>", true));
        ChatFormat format =
                new ChatFormat() {
                    @Override
                    public List<ChatTemplate.Span> render(
                            List<? extends Map<String, ?>> messages,
                            List<? extends Map<String, ?>> tools,
                            boolean findAssistant) {
                        return spans;
                    }

                    @Override
                    public String generationPrompt(List<? extends Map<String, ?>> messages) {
                        return spans.get(0).text();
                    }

                    @Override
                    public String endOfTurn() {
                        return "</s>";
                    }

                    @Override
                    public boolean addsMarkers() {
                        return false;
                    }

                    @Override
                    public void writeConfig(Path model) {}
                };
        List<Document> chat =
                List.of(Document.ofMessages(List.of(Map.of("role", "user", "content", "hi"))));
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name")) {
            long[] whole = tokenizer.encode("[INST] hi [/INST] ok</s>").getIds();
            // One marker at the start, one for each space, none added where the reply starts.
            assertEquals(1, whole[0]);
            assertEquals(22, whole.length);
            Sequences.Sequence sequence =
                    Sequences.tokenize(
                                    chat,
                                    tokenizer,
                                    64,
                                    Sequences.Packing.NONE,
                                    format,
                                    true,
                                    -1,
                                    16)
                            .getSequences()
                            .get(0);
            assertArrayEquals(Arrays.copyOf(whole, whole.length - 1), sequence.inputs());
            long[] expected = new long[whole.length - 1];
            Arrays.fill(expected, CausalLmLoss.IGNORE);
            // The reply's tokens: the marker for its space, o, k and </s>.
            for (int i = whole.length - 4; i < whole.length; i++) {
                expected[i - 1] = whole[i];
            }
            assertArrayEquals(expected, sequence.labels());
        }
    }
}
