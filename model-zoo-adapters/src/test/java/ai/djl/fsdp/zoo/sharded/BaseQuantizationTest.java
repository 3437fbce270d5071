package ai.djl.fsdp.zoo.sharded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ShardedSave#base} writes a {@code quantization_config} only for the base the model holds:
 * no config for a 4-bit base (its packed codes would be plain tensors under a float {@code
 * config.json}), a config for a float base (a block its tensors do not match), or one of another
 * code, is refused in one line before anything is written.
 */
class BaseQuantizationTest {

    private static final String FIRST = "model.layers.0.self_attn.q_proj";

    @TempDir Path dir;

    @Test
    void aBaseHeldIn4BitsNeedsItsOwnConfig() throws IOException {
        assertEquals(
                "the base is held in 4 bits ("
                        + FIRST
                        + " is quantized) but no quantization config was given: pass the"
                        + " QuantizationConfig it was quantized with, so config.json describes its"
                        + " packed weights",
                refusal(config(QuantType.NF4), null));
        assertEquals(
                "the quantization config says fp4 nested in blocks of 64 but "
                        + FIRST
                        + " is held as nf4 nested in blocks of 64: pass the QuantizationConfig the"
                        + " base was quantized with",
                refusal(config(QuantType.NF4), config(QuantType.FP4)));
    }

    @Test
    void aFloatBaseTakesNoConfig() throws IOException {
        assertEquals(
                "a quantization config (nf4, double quantization, compute float32, stored as"
                        + " uint8) was given but the base holds no 4-bit weights: pass null to save"
                        + " a float base",
                refusal(null, config(QuantType.NF4)));
    }

    /**
     * Saves the base of llama-tiny, quantized as {@code held} (float where null), under a one-rank
     * trainer with {@code given} as its configuration, and returns the refusal's message; nothing
     * was written.
     */
    private String refusal(QuantizationConfig held, QuantizationConfig given) throws IOException {
        Path out = dir.resolve("base");
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""));
                Model model = Model.newInstance("base-save", Device.cpu())) {
            CausalLM lm = TestModels.seeded("llama-tiny", model.getNDManager(), 5);
            if (held != null) {
                Qlora.quantize(lm, held.getQuant(), Qlora.DEFAULT_SKIP);
            }
            model.setBlock(lm);
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model,
                            TestModels.trainingConfig(),
                            group,
                            FsdpConfig.builder()
                                    .optWrapPolicy(TestModels.decoderLayers(lm))
                                    .build(),
                            TrainerOptions.builder().optGatherOnClose(false).build())) {
                IllegalArgumentException e =
                        assertThrows(
                                IllegalArgumentException.class,
                                () ->
                                        ShardedSave.base(
                                                trainer,
                                                lm,
                                                out,
                                                Dtype.F32,
                                                HfCheckpoint.DEFAULT_MAX_SHARD_BYTES,
                                                given));
                assertFalse(Files.exists(out), "nothing written");
                return e.getMessage();
            }
        }
    }

    /** The code with double quantization, its other settings transformers' defaults. */
    private static QuantizationConfig config(QuantType type) {
        return QuantizationConfig.builder().setQuantType(type).optNested(true).build();
    }
}
