package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.qlora.PrequantizedSource;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pre-quantized checkpoint whose files disagree with its configuration is refused in one line
 * naming the tensor; a model kept in float refuses its 4-bit tensors. (That a good one loads bit
 * for bit as the float checkpoint quantized at load: {@link QloraStartChecks}.)
 */
class PrequantizedCheckpointTest {

    private static final String LAYER = "model.layers.0.self_attn.q_proj.weight";

    @TempDir static Path directory;
    private static Path packed;

    @BeforeAll
    static void write() throws IOException {
        Path checkpoint = directory.resolve("float");
        try (NDManager manager = TestModels.newManager()) {
            HfCheckpoint.save(TestModels.seeded("llama-tiny", manager, 5), checkpoint);
        }
        QuantizationConfig config =
                QuantizationConfig.builder().setQuantType(QuantType.FP4).optNested(true).build();
        packed = PrequantizedCheckpoints.write(checkpoint, config, directory.resolve("fp4"));
    }

    @Test
    void aMissingAbsmaxIsNamed() throws IOException {
        assertRefused(
                rewrite("no-absmax", Map.of(LAYER + ".absmax", new byte[0])),
                LAYER + ".absmax is missing: bitsandbytes saves it beside every 4-bit weight");
    }

    @Test
    void aQuantStateOfAnotherShapeIsNamed() throws IOException {
        String state = LAYER + PrequantizedSource.QUANT_STATE + "fp4";
        String json;
        try (SafetensorsCheckpoint stored = SafetensorsCheckpoint.open(packed);
                NDManager manager = TestModels.newManager()) {
            json = new String(stored.read(manager, state).toByteArray(), StandardCharsets.UTF_8);
        }
        String swapped = json.replace("\"shape\":[64,64]", "\"shape\":[32,128]");
        assertFalse(swapped.equals(json), json);
        assertRefused(
                rewrite("shape", Map.of(state, swapped.getBytes(StandardCharsets.UTF_8))),
                state + ": shape is [32, 128] where the model's configuration needs [64, 64]");
    }

    @Test
    void scalesOfTheWrongShapeAreNamed() throws IOException {
        assertRefused(
                rewrite("nested-absmax", Map.of(LAYER + ".nested_absmax", new byte[] {1, 2})),
                LAYER
                        + ".nested_absmax: U8 (2) where its configuration (fp4, double"
                        + " quantization) needs F32 (1)");
    }

    @Test
    void aConfigurationOfAnotherCodeIsRefused() throws IOException {
        Path nf4 = rewrite("nf4", Map.of());
        String config = Files.readString(nf4.resolve(ConfigJson.FILE));
        Files.writeString(
                nf4.resolve(ConfigJson.FILE),
                config.replace(
                        "\"bnb_4bit_quant_type\": \"fp4\"", "\"bnb_4bit_quant_type\": \"nf4\""));
        assertRefused(
                nf4,
                LAYER
                        + PrequantizedSource.QUANT_STATE
                        + "nf4 is missing (the checkpoint has ["
                        + LAYER
                        + PrequantizedSource.QUANT_STATE
                        + "fp4]): the weight is not stored as its configuration (nf4) says");
    }

    @Test
    void aFloatModelRefusesTheFourBitTensors() throws IOException {
        CausalLM lm = Models.forCheckpoint(ModelFamilies.read(packed));
        String message =
                assertThrows(
                                IllegalArgumentException.class,
                                () -> HfCheckpoint.shardSource(lm, packed))
                        .getMessage();
        assertTrue(
                message.matches(
                        "model\\.layers\\.\\d+\\.\\w+\\.\\w+\\.weight\\.quant_state\\.bitsandbytes__fp4:"
                            + " the checkpoint stores this weight in 4 bits \\(bitsandbytes\\), but"
                            + " the model keeps it in float; load the checkpoint as a 4-bit base,"
                            + " with its quantization_config"),
                message);
    }

    /** The checkpoint opened as a 4-bit base must refuse it with {@code expected}, in one line. */
    private static void assertRefused(Path checkpoint, String expected) throws IOException {
        CausalLM lm = Models.forCheckpoint(ModelFamilies.read(checkpoint));
        Qlora.quantize(lm, QuantizationConfig.read(checkpoint).getQuant(), Qlora.DEFAULT_SKIP);
        String message =
                assertThrows(
                                IllegalArgumentException.class,
                                () -> HfCheckpoint.shardSource(lm, checkpoint).close())
                        .getMessage();
        assertEquals(
                expected,
                message.substring(0, Math.min(message.length(), expected.length())),
                message);
        assertFalse(message.contains("\n"), message);
    }

    /**
     * Copies the pre-quantized checkpoint, each tensor named in {@code replaced} dropped (empty
     * bytes) or replaced by those bytes as uint8.
     */
    private static Path rewrite(String name, Map<String, byte[]> replaced) throws IOException {
        Path copy = Files.createDirectories(directory.resolve(name));
        Files.copy(packed.resolve(ConfigJson.FILE), copy.resolve(ConfigJson.FILE));
        SafetensorsWriter writer = new SafetensorsWriter();
        try (SafetensorsCheckpoint stored = SafetensorsCheckpoint.open(packed);
                NDManager manager = TestModels.newManager()) {
            for (String tensor : stored.names()) {
                byte[] bytes = replaced.get(tensor);
                if (bytes == null) {
                    writer.add(tensor, stored.read(manager, tensor));
                } else if (bytes.length > 0) {
                    writer.add(tensor, Dtype.U8, new Shape(bytes.length), ByteBuffer.wrap(bytes));
                }
            }
            writer.write(copy.resolve(SafetensorsCheckpoint.SINGLE_FILE));
        }
        return copy;
    }
}
