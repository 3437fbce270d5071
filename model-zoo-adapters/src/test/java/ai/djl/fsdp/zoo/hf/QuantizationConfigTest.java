package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.models.Models;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code quantization_config} as transformers writes it for a QLoRA base is read with its meaning,
 * missing keys take transformers' defaults, and what this build cannot honour is refused in one
 * line naming the key.
 */
class QuantizationConfigTest {

    /** BitsAndBytesConfig.to_dict() of the PEFT/Accelerate FSDP-QLoRA recipe's base. */
    private static final String QLORA =
            """
            {"_load_in_4bit": true, "_load_in_8bit": false,
             "bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_quant_storage": "bfloat16",
             "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true,
             "llm_int8_enable_fp32_cpu_offload": false, "llm_int8_has_fp16_weight": false,
             "llm_int8_skip_modules": null, "llm_int8_threshold": 6.0,
             "load_in_4bit": true, "load_in_8bit": false, "quant_method": "bitsandbytes"}
            """;

    @Test
    void theRecipesBlockReadsWithItsMeaning() {
        QuantizationConfig config = QuantizationConfig.fromJson(json(QLORA));
        assertEquals(QuantType.NF4, config.getQuant().getQuantType());
        assertTrue(config.getQuant().isNested());
        assertEquals(64, config.getQuant().getBlockSize());
        assertEquals(Precision.BFLOAT16, config.getComputeType());
        assertEquals("bfloat16", config.getStorageType());
        assertNull(config.getSkipModules());
        assertEquals(
                "nf4, double quantization, compute bfloat16, stored as bfloat16",
                config.describe());
    }

    @Test
    void missingKeysTakeTransformersDefaults() {
        QuantizationConfig config =
                QuantizationConfig.fromJson(
                        json(
                                "{\"load_in_4bit\": true, \"bnb_4bit_compute_dtype\":"
                                        + " \"torch.float16\", \"llm_int8_skip_modules\":"
                                        + " [\"lm_head\", \"mlp.down_proj\"]}"));
        assertEquals(QuantType.FP4, config.getQuant().getQuantType());
        assertFalse(config.getQuant().isNested());
        assertEquals(Precision.FLOAT16, config.getComputeType());
        assertEquals("uint8", config.getStorageType());
        assertEquals(List.of("lm_head", "mlp.down_proj"), config.getSkipModules());
    }

    @Test
    void anEncoderDecoderModelIsRefusedBeforeAnythingIsQuantized() {
        QuantizationConfig config = QuantizationConfig.fromJson(json(QLORA));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> config.apply(Models.builtin("t5-tiny").newModel()));
        assertTrue(
                e.getMessage().contains("T5ForConditionalGeneration is not one yet"),
                e::getMessage);
    }

    @Test
    void whatCannotBeHonouredIsRefusedNamingTheKey() {
        assertRefused("quantization_config.quant_method gptq", "quant_method", "\"gptq\"");
        assertRefused("quantization_config.load_in_8bit true: 8-bit", "load_in_8bit", "true");
        assertRefused("quantization_config.load_in_4bit false", "load_in_4bit", "false");
        assertRefused(
                "quantization_config.bnb_4bit_quant_type int4: use nf4 or fp4",
                "bnb_4bit_quant_type",
                "\"int4\"");
        assertRefused(
                "quantization_config.bnb_4bit_compute_dtype int8",
                "bnb_4bit_compute_dtype",
                "\"int8\"");
        assertRefused(
                "quantization_config.bnb_4bit_quant_storage complex64",
                "bnb_4bit_quant_storage",
                "\"complex64\"");
        assertRefused(
                "quantization_config.bnb_4bit_use_double_quant \"yes\": give true or false",
                "bnb_4bit_use_double_quant",
                "\"yes\"");
        assertRefused(
                "quantization_config.llm_int8_skip_modules \"lm_head\"",
                "llm_int8_skip_modules",
                "\"lm_head\"");
        assertRefused(
                "quantization_config.llm_int8_skip_modules [\"lm_head\",3]",
                "llm_int8_skip_modules",
                "[\"lm_head\", 3]");
    }

    private static void assertRefused(String expected, String key, String value) {
        JsonObject block = json(QLORA);
        block.add(key, JsonParser.parseString(value));
        String message =
                assertThrows(
                                IllegalArgumentException.class,
                                () -> QuantizationConfig.fromJson(block))
                        .getMessage();
        assertTrue(message.startsWith(expected), message);
    }

    private static JsonObject json(String text) {
        return JsonParser.parseString(text).getAsJsonObject();
    }
}
