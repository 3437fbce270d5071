package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.tensor.quant.QuantizedBits;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import ai.djl.fsdp.trainer.CommunicationQuantization;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code finetune}'s summary reports the bytes the busiest rank sent in the last step by kind of
 * collective, the same figures in its text and in {@code summary.json}, and they follow the
 * quantization: on two ranks, int8 weights gather what a block's codes and scale take per float32
 * value of the unquantized run ({@link SymmetricQuantizer#rowBytes}: 0.2656x in the default blocks
 * of 64), int4 gradients reduce 0.1406x, each plus at most 1% for padding the shards to whole
 * blocks; the all-reduces (the gradient norm) and broadcasts send what they sent.
 */
class CommunicationSummaryTest {

    /** The most the padding of each shard to whole blocks adds to a quantized kind's bytes. */
    private static final double PADDING = 1.01;

    @Test
    void theSummaryReportsBytesByKindAsTheQuantizationSends(@TempDir Path directory)
            throws Exception {
        SentBytes exact = run(directory.resolve("none"), "none");
        SentBytes quantized = run(directory.resolve("q"), "weights=int8,gradients=int4");
        assertTrue(exact.allGather() > 0 && exact.reduceScatter() > 0, exact.toString());
        int block = CommunicationQuantization.DEFAULT_BLOCK_SIZE;
        assertFraction(
                "weights gathered",
                fraction(QuantizedBits.INT8, block),
                exact.allGather(),
                quantized.allGather());
        assertFraction(
                "gradients reduced",
                fraction(QuantizedBits.INT4, block),
                exact.reduceScatter(),
                quantized.reduceScatter());
        assertEquals(exact.allReduce(), quantized.allReduce(), "the all-reduces");
        assertEquals(exact.other(), quantized.other(), "the broadcasts");
    }

    /** The bytes a quantized block takes over its values' float32 bytes. */
    private static double fraction(QuantizedBits bits, int block) {
        return SymmetricQuantizer.of(bits, block).rowBytes(block) / (double) (Float.BYTES * block);
    }

    private static void assertFraction(String what, double fraction, long exact, long quantized) {
        double measured = quantized / (double) exact;
        String figures =
                String.format(
                        Locale.ROOT,
                        "%s: %d bytes against %d unquantized, %.4fx; expected %.4fx to %.4fx",
                        what,
                        quantized,
                        exact,
                        measured,
                        fraction,
                        fraction * PADDING);
        System.out.println(figures);
        assertTrue(measured >= fraction && measured <= fraction * PADDING, figures);
    }

    /**
     * Runs 2 steps with the quantization; returns the summary's bytes, checked against its text.
     */
    private static SentBytes run(Path output, String quantization) throws Exception {
        String out =
                FinetuneCommandTest.launch(
                                List.of(
                                        "--output_dir", output.toString(),
                                        "--max_steps", "2",
                                        "--per_device_train_batch_size", "4",
                                        "--eval_strategy", "no",
                                        "--exact_match_samples", "0",
                                        "--fsdp_communication_quantization", quantization))
                        .rank(0)
                        .output();
        JsonObject summary =
                JsonParser.parseString(
                                Files.readString(
                                        output.resolve("summary.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        long[] bytes = new long[SentBytes.KINDS.size()];
        for (int kind = 0; kind < bytes.length; kind++) {
            String key = "sent_" + SentBytes.KINDS.get(kind) + "_bytes_per_step";
            assertTrue(summary.has(key), key + " in " + summary);
            bytes[kind] = summary.get(key).getAsLong();
        }
        SentBytes sent = SentBytes.of(bytes);
        assertTrue(
                out.contains("busiest rank, last step: " + sent.format("_per_step")),
                quantization + ": the printed figures are summary.json's: " + out);
        return sent;
    }
}
