package ai.djl.fsdp.bench.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import org.junit.jupiter.api.Test;

/** The benchmark's options map onto the model zoo's GPT-2 configuration. */
class TrainBenchSettingsTest {

    /** GPT-2 settings of 10 timed steps after 2, the strategy's own resharding, no LoRA. */
    private static TrainBenchSettings settings(
            int nproc, String sharding, GptShape shape, String attention, String precision) {
        return settings(nproc, sharding, shape, attention, precision, 0, "gpt2", 0);
    }

    /** Settings of 10 timed steps after 2, the strategy's own resharding, unsplit shard groups. */
    private static TrainBenchSettings settings(
            int nproc,
            String sharding,
            GptShape shape,
            String attention,
            String precision,
            int loraRank,
            String model,
            int intermediate) {
        return new TrainBenchSettings(
                nproc,
                sharding,
                10,
                2,
                shape,
                attention,
                precision,
                null,
                null,
                loraRank,
                0,
                model,
                intermediate,
                "none");
    }

    @Test
    void optionsBecomeTheGpt2Configuration() {
        TrainBenchSettings settings =
                settings(
                        2,
                        "FULL_SHARD",
                        new GptShape(12, 768, 12, 8192, 64, 2),
                        "explicit",
                        "fp32");
        GPT2Config config = settings.shape().modelConfig();
        assertEquals(12, config.numLayers());
        assertEquals(768, config.hiddenSize());
        assertEquals(12, config.numHeads());
        assertEquals(8192, config.vocabSize());
        assertEquals(64, config.maxPositions());
        assertEquals(0f, config.embeddingDropout());
        assertEquals(0f, config.attentionDropout());
        assertEquals(0f, config.residualDropout());
    }

    @Test
    void modelChoosesTheFamilyAtTheShape() {
        GptShape shape = new GptShape(4, 256, 8, 1000, 64, 2);
        for (String family : new String[] {"llama", "mistral", "qwen2", "qwen3"}) {
            TrainBenchSettings settings =
                    settings(2, "FULL_SHARD", shape, "sdpa", "bf16", 8, family, 0);
            settings.check();
            LlamaConfig config = (LlamaConfig) settings.modelConfig();
            assertEquals(family, config.modelType());
            assertEquals(4, config.numLayers());
            assertEquals(256, config.hiddenSize());
            assertEquals(2, config.numKeyValueHeads(), "4 query heads per key-value head");
            assertEquals(704, config.intermediateSize(), "8/3 of the width, a multiple of 64");
            assertEquals(64, config.maxPositions());
            // Projections 2 C (2 C + 2 KV) + 6 C I, attention 4 T C, head 2 C V; times 3.
            double perLayer = 2 * 256 * (512 + 2 * 64) + 6 * 256 * 704 + 4 * 64 * 256;
            assertEquals(3 * (4 * perLayer + 2 * 256 * 1000), settings.modelFlopsPerToken(), 1e-6);
        }
        TrainBenchSettings mistral =
                settings(1, "NONE", shape, "explicit", "fp32", 0, "mistral", 0);
        assertEquals(32, ((LlamaConfig) mistral.modelConfig()).slidingWindow());
        TrainBenchSettings unknown = settings(1, "NONE", shape, "explicit", "fp32", 0, "gemma", 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, unknown::check);
        assertTrue(e.getMessage().contains("--model"), e.getMessage());
        assertTrue(e.getMessage().contains("qwen3"), e.getMessage());
    }

    @Test
    void theIntermediateSizeCanBeGivenForLlama1b() {
        // Llama 3.2 1B's proportions: 16 x 2048, 32 heads, 8 key-value heads, MLP 8192.
        GptShape shape = new GptShape(16, 2048, 32, 32000, 2048, 1);
        TrainBenchSettings llama =
                settings(1, "FULL_SHARD", shape, "sdpa", "bf16", 0, "llama", 8192);
        llama.check();
        LlamaConfig config = (LlamaConfig) llama.modelConfig();
        assertEquals(8192, config.intermediateSize());
        assertEquals(8, config.numKeyValueHeads());
        double perLayer = 2 * 2048 * (2 * 2048 + 2 * 512) + 6 * 2048 * 8192 + 4 * 2048 * 2048;
        assertEquals(3 * (16 * perLayer + 2 * 2048 * 32000), llama.modelFlopsPerToken(), 1e-3);
        TrainBenchSettings gpt2 = settings(1, "FULL_SHARD", shape, "sdpa", "bf16", 0, "gpt2", 8192);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, gpt2::check);
        assertTrue(e.getMessage().contains("--intermediate"), e.getMessage());
    }

    @Test
    void widthNotAMultipleOfHeadsIsRejectedNamingTheOptions() {
        TrainBenchSettings settings =
                settings(1, "NONE", new GptShape(2, 100, 3, 1000, 8, 2), "explicit", "fp32");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, settings::check);
        assertTrue(e.getMessage().contains("--heads"), e.getMessage());
    }

    @Test
    void unknownAttentionIsRejectedNamingTheOption() {
        TrainBenchSettings settings =
                settings(2, "FULL_SHARD", new GptShape(2, 64, 4, 1000, 8, 2), "flash", "fp32");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, settings::check);
        assertTrue(e.getMessage().contains("--attention"), e.getMessage());
        assertTrue(e.getMessage().contains("sdpa"), e.getMessage());
    }

    @Test
    void precisionIsCheckedAndTheBaselineStaysFloat32() {
        TrainBenchSettings unknown =
                settings(2, "FULL_SHARD", new GptShape(2, 64, 4, 1000, 8, 2), "explicit", "fp8");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, unknown::check);
        assertTrue(e.getMessage().contains("--precision"), e.getMessage());
        TrainBenchSettings baseline =
                settings(1, "NONE", new GptShape(2, 64, 4, 1000, 8, 2), "explicit", "bf16");
        e = assertThrows(IllegalArgumentException.class, baseline::check);
        assertTrue(e.getMessage().contains("--precision fp32"), e.getMessage());
        settings(2, "SHARD_GRAD_OP", new GptShape(2, 64, 4, 1000, 8, 2), "explicit", "bf16")
                .check();
    }

    /** Settings of 4 ranks with a shard group of {@code size}. */
    private static TrainBenchSettings grouped(String sharding, int size) {
        return small(4, sharding, size, "none");
    }

    @Test
    void shardGroupSizeIsForHybridStrategiesAndDividesTheRanks() {
        grouped("HYBRID_SHARD", 2).check();
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class, grouped("HYBRID_SHARD_ZERO2", 3)::check);
        assertTrue(e.getMessage().contains("must divide --nproc 4"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, grouped("FULL_SHARD", 2)::check);
        assertTrue(e.getMessage().contains("HYBRID_SHARD"), e.getMessage());
    }

    /** Settings of a small shape: ranks, strategy, shard group size and quantization. */
    private static TrainBenchSettings small(
            int nproc, String sharding, int shardGroupSize, String quantization) {
        GptShape shape = new GptShape(2, 64, 4, 1000, 8, 2);
        return new TrainBenchSettings(
                nproc,
                sharding,
                10,
                2,
                shape,
                "explicit",
                "fp32",
                null,
                null,
                0,
                shardGroupSize,
                "gpt2",
                0,
                quantization);
    }

    @Test
    void communicationQuantizationIsReadAndRefusedForThePlainTrainer() {
        TrainBenchSettings quantized = small(2, "FULL_SHARD", 0, "weights=int8,gradients=int4");
        quantized.check();
        assertEquals("weights=int8,gradients=int4,block=64", quantized.quantization().toString());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class, small(1, "NONE", 0, "weights=int8")::check);
        assertTrue(e.getMessage().contains("drop --communication-quantization"), e.getMessage());
        e =
                assertThrows(
                        IllegalArgumentException.class,
                        small(2, "FULL_SHARD", 0, "weights=int5")::check);
        assertTrue(e.getMessage().startsWith("--communication-quantization: "), e.getMessage());
    }

    @Test
    void modelFlopsCountForwardAndBackwardProducts() {
        // The default shape: 6 layers, width 384, vocabulary 50257, sequence 128.
        TrainBenchSettings settings =
                settings(2, "FULL_SHARD", new GptShape(6, 384, 6, 50257, 128, 8), "sdpa", "fp32");
        double forward = 6 * (24.0 * 384 * 384 + 4.0 * 128 * 384) + 2.0 * 384 * 50257;
        assertEquals(3 * forward, settings.modelFlopsPerToken(), 1e-6 * forward);
    }

    @Test
    void matMulPeakMeasuresBothPrecisions() {
        MatMulPeak peak = MatMulPeak.measure(Device.cpu());
        assertTrue(peak.float32() > 0 && Double.isFinite(peak.float32()), peak.toString());
        assertTrue(peak.bfloat16() > 0 && Double.isFinite(peak.bfloat16()), peak.toString());
    }
}
