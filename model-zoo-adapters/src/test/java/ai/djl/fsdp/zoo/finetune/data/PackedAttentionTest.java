package ai.djl.fsdp.zoo.finetune.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Padding-free packing ({@link Sequences.Packing#PER_DOCUMENT}): the batch's attention mask keeps
 * each packed document to itself, so a packed row's logits for each document equal the logits of
 * that document run alone (1e-5 relative to the logits' scale, both attention kernels, one and
 * several rows per batch, rows padded at the end); packing that crosses documents gives other
 * logits; and no token is lost or duplicated.
 */
class PackedAttentionTest {

    private static final int MAX_SEQ_LEN = 24;

    @ParameterizedTest
    @CsvSource({
        "gpt2-tiny, explicit, 1",
        "gpt2-tiny, sdpa, 4",
        "llama-tiny, explicit, 4",
        "llama-tiny, sdpa, 1"
    })
    void eachPackedDocumentIsComputedAsIfAlone(
            String name, String kernel, int rowsPerBatch, @TempDir Path directory)
            throws Exception {
        Path file = directory.resolve("tokenizer.json");
        ByteLevelTokenizer.write(file);
        List<Document> documents = new ArrayList<>();
        for (String text :
                new String[] {"one", "a second document", "3", "the fourth, rather longer one"}) {
            documents.add(Document.ofText(text));
        }
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name");
                NDManager manager = TestModels.newManager()) {
            Sequences perDocument = pack(documents, tokenizer, Sequences.Packing.PER_DOCUMENT);
            Sequences crossing = pack(documents, tokenizer, Sequences.Packing.CROSSING);
            CausalLM model = TestModels.seeded(name, manager, 11);
            AttentionKernel.of(kernel).applyTo(model);
            int count = perDocument.getSequences().size();
            assertTrue(count >= 3, "the documents fill several blocks");
            float worstInside = 0;
            float worstCrossing = 0;
            for (int first = 0; first < count; first += rowsPerBatch) {
                int[] rows = new int[Math.min(rowsPerBatch, count - first)];
                for (int r = 0; r < rows.length; r++) {
                    rows[r] = first + r;
                }
                NDList batch = perDocument.batch(manager, rows, 0);
                assertEquals(3, batch.size(), "the batch carries the document mask");
                NDList inputs = Sequences.modelInputs(batch);
                NDArray packed = TestModels.logits(model, inputs.get(0), inputs.get(1));
                NDArray crossed = TestModels.logits(model, inputs.get(0), null);
                for (int r = 0; r < rows.length; r++) {
                    Sequences.Sequence row = perDocument.getSequences().get(rows[r]);
                    long[] ids = row.documents();
                    for (int start = 0; start < ids.length; ) {
                        int end = start;
                        while (end < ids.length && ids[end] == ids[start]) {
                            end++;
                        }
                        NDIndex span = new NDIndex("{}, {}:{}", r, start, end);
                        NDArray alone =
                                TestModels.logits(
                                                model,
                                                manager.create(
                                                                Arrays.copyOfRange(
                                                                        row.inputs(), start, end))
                                                        .reshape(1, end - start),
                                                null)
                                        .get(0);
                        float scale = alone.abs().max().getFloat();
                        worstInside =
                                Math.max(
                                        worstInside,
                                        TestModels.maxDiff(packed.get(span), alone) / scale);
                        if (start > 0) {
                            worstCrossing =
                                    Math.max(
                                            worstCrossing,
                                            TestModels.maxDiff(crossed.get(span), alone) / scale);
                        }
                        start = end;
                    }
                }
            }
            assertTrue(worstInside < 1e-5f, "packed documents differ from alone: " + worstInside);
            assertTrue(worstCrossing > 1e-3f, "crossing attention changes later documents");
            for (Sequences.Sequence sequence : crossing.getSequences()) {
                assertNull(sequence.documents());
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"8", "24", "200"})
    void perDocumentPackingLosesAndDuplicatesNoToken(int maxSeqLen, @TempDir Path directory)
            throws Exception {
        Path base = directory.resolve("base.json");
        ByteLevelTokenizer.write(base);
        Path file = directory.resolve("tokenizer.json");
        ChatTemplate.writeTokenizer(base, file, true);
        List<Document> chats = ArithmeticChat.generate(20, 5, 2).get("train");
        try (HuggingFaceTokenizer tokenizer = Tokenizers.load(file, "--tokenizer_name")) {
            List<long[]> encoded = new ArrayList<>();
            for (Document document : chats) {
                StringBuilder text = new StringBuilder();
                ChatTemplate.render(document.messages()).forEach(s -> text.append(s.text()));
                encoded.add(tokenizer.encode(text.toString()).getIds());
            }
            Sequences packed =
                    Sequences.tokenize(
                            chats,
                            tokenizer,
                            maxSeqLen,
                            Sequences.Packing.PER_DOCUMENT,
                            ChatTemplate.CHATML,
                            false,
                            -1,
                            259);
            List<Long> inputs = new ArrayList<>();
            List<Long> labels = new ArrayList<>();
            for (Sequences.Sequence sequence : packed.getSequences()) {
                assertNotNull(sequence.documents());
                assertTrue(sequence.inputs().length <= maxSeqLen);
                assertEquals(1, sequence.documents()[0], "each block starts with document 1");
                for (int i = 0; i < sequence.inputs().length; i++) {
                    boolean starts =
                            i > 0 && sequence.documents()[i] != sequence.documents()[i - 1];
                    if (starts) {
                        assertEquals(sequence.documents()[i - 1] + 1, sequence.documents()[i]);
                    }
                    inputs.add(sequence.inputs()[i]);
                    labels.add(sequence.labels()[i]);
                }
            }
            List<Long> expectedInputs = new ArrayList<>();
            List<Long> expectedLabels = new ArrayList<>();
            for (long[] ids : encoded) {
                for (int i = 0; i < ids.length; i++) {
                    expectedInputs.add(ids[i]);
                    expectedLabels.add(i + 1 < ids.length ? ids[i + 1] : CausalLmLoss.IGNORE);
                }
            }
            // The stream's last token is no input: it has no next token.
            expectedInputs.remove(expectedInputs.size() - 1);
            expectedLabels.remove(expectedLabels.size() - 1);
            assertEquals(expectedInputs, inputs, "every input once, in order");
            assertEquals(expectedLabels, labels, "every next token of its own document once");
            long trained = 0;
            for (long[] ids : encoded) {
                trained += ids.length - 1;
            }
            assertEquals(trained, packed.countLabels());
        }
    }

    private static Sequences pack(
            List<Document> documents, HuggingFaceTokenizer tokenizer, Sequences.Packing packing) {
        return Sequences.tokenize(
                documents, tokenizer, MAX_SEQ_LEN, packing, ChatTemplate.CHATML, false, 0, 259);
    }
}
