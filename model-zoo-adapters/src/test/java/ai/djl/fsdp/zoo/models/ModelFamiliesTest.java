package ai.djl.fsdp.zoo.models;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.llama.RopeScaling;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The registry reads the {@code config.json} of the released models of every family (shapes as
 * published: Llama 3.2 1B, Llama 3.1 8B, Mistral 7B v0.1 and v0.3, Qwen2.5 0.5B, Qwen3 0.6B), and
 * refuses what it does not implement with one message naming the key and the fix.
 */
class ModelFamiliesTest {

    private static final String LLAMA_3_2_1B =
            """
            {"architectures": ["LlamaForCausalLM"], "attention_bias": false,
             "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
             "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
             "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
             "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
             "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
               "original_max_position_embeddings": 8192, "rope_type": "llama3"},
             "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
             "vocab_size": 128256}
            """;

    private static final String LLAMA_3_1_8B =
            """
            {"architectures": ["LlamaForCausalLM"], "bos_token_id": 128000,
             "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu", "hidden_size": 4096,
             "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
             "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
             "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192, "rope_type": "llama3"},
             "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256}
            """;

    private static final String MISTRAL_7B_V01 =
            """
            {"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
             "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
             "intermediate_size": 14336, "max_position_embeddings": 32768,
             "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
             "sliding_window": 4096, "tie_word_embeddings": false, "vocab_size": 32000}
            """;

    private static final String QWEN2_5_0_5B =
            """
            {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
             "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
             "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
             "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
             "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
             "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
             "tie_word_embeddings": true, "use_sliding_window": false, "vocab_size": 151936}
            """;

    private static final String QWEN3_0_6B =
            """
            {"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
             "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
             "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
             "initializer_range": 0.02, "intermediate_size": 3072,
             "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
             "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
             "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
             "sliding_window": null, "tie_word_embeddings": true, "use_sliding_window": false,
             "vocab_size": 151936}
            """;

    @Test
    void registryListsEveryFamilyWithItsLayerAndArchitecture() {
        assertEquals(
                List.of("gpt2", "llama", "mistral", "qwen2", "qwen3", "t5"),
                ModelFamilies.modelTypes());
        assertEquals("T5Block", ModelFamilies.of("t5").decoderLayer().getSimpleName());
        assertEquals(
                "MistralDecoderLayer", ModelFamilies.of("mistral").decoderLayer().getSimpleName());
        assertEquals("Qwen2DecoderLayer", ModelFamilies.of("qwen2").decoderLayer().getSimpleName());
        assertEquals("Qwen3ForCausalLM", ModelFamilies.of("qwen3").architecture());
        assertEquals("GPT2Block", ModelFamilies.of("gpt2").decoderLayer().getSimpleName());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ModelFamilies.parse(json("{\"model_type\": \"gemma\"}")));
        assertTrue(
                e.getMessage().contains("[gpt2, llama, mistral, qwen2, qwen3, t5]"),
                e.getMessage());
    }

    @Test
    void llama3ConfigsLoadWithTheirRopeScaling() {
        LlamaConfig small = (LlamaConfig) ModelFamilies.parse(json(LLAMA_3_2_1B));
        assertEquals("llama3", small.ropeScaling().type());
        assertTrue(small.tieWordEmbeddings());
        assertEquals(128256, small.vocabSize());
        assertEquals(64, small.headDim());
        assertEquals(List.of(128001L, 128008L, 128009L), small.eosTokenIds());
        LlamaConfig big = (LlamaConfig) ModelFamilies.parse(json(LLAMA_3_1_8B));
        assertFalse(big.tieWordEmbeddings());
        assertEquals(8, big.numKeyValueHeads());
        // Written back, read again: the same configuration.
        assertEquals(big.toJson(), ModelFamilies.parse(big.toJson()).toJson());
        assertEquals(
                "LlamaForCausalLM",
                big.toJson().getAsJsonArray("architectures").get(0).getAsString());
    }

    @Test
    void llama3FrequenciesFollowTheirBands() {
        JsonObject scaling =
                json(
                        "{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0,"
                                + " \"high_freq_factor\": 4.0,"
                                + " \"original_max_position_embeddings\": 8192}");
        float[] plain = RopeScaling.of(null).inverseFrequencies(128, 500000, 131072, 0);
        float[] scaled = RopeScaling.of(scaling).inverseFrequencies(128, 500000, 131072, 0);
        // Wavelengths under 8192 / 4 keep their frequency, those over 8192 are divided by 8.
        assertEquals(plain[0], scaled[0]);
        assertEquals(plain[63] / 8, scaled[63], 1e-6 * plain[63]);
        for (int i = 0; i < plain.length; i++) {
            assertTrue(scaled[i] <= plain[i] && scaled[i] >= plain[i] / 8 * (1 - 1e-6f));
        }
    }

    @Test
    void mistralSlidingWindowIsReadAndNullMeansNone() {
        ModelConfig v01 = ModelFamilies.parse(json(MISTRAL_7B_V01));
        assertEquals(4096, ((LlamaConfig) v01).slidingWindow());
        JsonObject v03 = json(MISTRAL_7B_V01);
        v03.add("sliding_window", com.google.gson.JsonNull.INSTANCE);
        assertEquals(0, ((LlamaConfig) ModelFamilies.parse(v03)).slidingWindow());
        JsonObject absent = json(MISTRAL_7B_V01);
        absent.remove("sliding_window");
        assertEquals(4096, ((LlamaConfig) ModelFamilies.parse(absent)).slidingWindow());
        // Written back and read again, no window stays no window.
        ModelConfig reread = ModelFamilies.parse(ModelFamilies.parse(v03).toJson());
        assertEquals("mistral", reread.modelType());
        assertEquals(0, ((LlamaConfig) reread).slidingWindow());
    }

    @Test
    void qwenConfigsLoadWithTheirFeatures() {
        LlamaConfig qwen2 = (LlamaConfig) ModelFamilies.parse(json(QWEN2_5_0_5B));
        assertTrue(qwen2.qkvBias());
        assertFalse(qwen2.outputBias());
        assertFalse(qwen2.qkNorm());
        assertEquals(64, qwen2.headDim());
        assertEquals(1e6, qwen2.ropeTheta());
        LlamaConfig qwen3 = (LlamaConfig) ModelFamilies.parse(json(QWEN3_0_6B));
        assertTrue(qwen3.qkNorm());
        assertFalse(qwen3.qkvBias());
        assertEquals(128, qwen3.headDim());
        JsonObject noHeadDim = json(QWEN3_0_6B);
        noHeadDim.remove("head_dim");
        assertEquals(128, ((LlamaConfig) ModelFamilies.parse(noHeadDim)).headDim());
    }

    /**
     * A config.json without max_position_embeddings gets its family's default, as transformers'
     * configuration classes give it: Llama 2048, Mistral 4096 x 32, Qwen2 and Qwen3 32768.
     */
    @Test
    void eachFamilyDefaultsMaxPositionEmbeddingsAsHuggingFace() {
        String[][] families = {
            {LLAMA_3_2_1B, "2048"},
            {MISTRAL_7B_V01, "131072"},
            {QWEN2_5_0_5B, "32768"},
            {QWEN3_0_6B, "32768"}
        };
        for (String[] family : families) {
            JsonObject config = json(family[0]);
            config.remove("max_position_embeddings");
            ModelConfig parsed = ModelFamilies.parse(config);
            assertEquals(Integer.parseInt(family[1]), parsed.maxPositions(), parsed.modelType());
            assertEquals(
                    parsed.maxPositions(),
                    ModelFamilies.parse(parsed.toJson()).maxPositions(),
                    "written and read back");
            config.addProperty("max_position_embeddings", 512);
            assertEquals(512, ModelFamilies.parse(config).maxPositions(), "the file's own wins");
        }
    }

    @Test
    void unsupportedFeaturesAreRefusedNamingTheFix() {
        JsonObject yarn = json(LLAMA_3_1_8B);
        yarn.add("rope_scaling", json("{\"rope_type\": \"yarn\", \"factor\": 4.0}"));
        assertRefused(yarn, "[default, linear, dynamic, llama3]");

        JsonObject incomplete = json(LLAMA_3_1_8B);
        incomplete.getAsJsonObject("rope_scaling").remove("low_freq_factor");
        assertRefused(incomplete, "low_freq_factor");

        JsonObject window = json(QWEN2_5_0_5B);
        window.addProperty("use_sliding_window", true);
        assertRefused(window, "use_sliding_window");

        JsonObject biased = json(MISTRAL_7B_V01);
        biased.addProperty("attention_bias", true);
        assertRefused(biased, "no biases");

        JsonObject mlpBias = json(QWEN3_0_6B);
        mlpBias.addProperty("mlp_bias", true);
        assertRefused(mlpBias, "mlp_bias");

        // Zero or negative bases and epsilons parse as numbers but give NaN logits.
        for (double theta : new double[] {0, -500000}) {
            JsonObject base = json(LLAMA_3_1_8B);
            base.addProperty("rope_theta", theta);
            assertRefused(base, "rope_theta " + theta + " must be positive");
        }
        JsonObject epsilon = json(QWEN2_5_0_5B);
        epsilon.addProperty("rms_norm_eps", -1e-6);
        assertRefused(epsilon, "rms_norm_eps");
    }

    private static void assertRefused(JsonObject config, String expected) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(config));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void aPreQuantizedConfigIsReadAndChecked() {
        JsonObject config = json(LLAMA_3_2_1B);
        JsonObject block =
                json(
                        "{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,"
                                + " \"bnb_4bit_quant_type\": \"nf4\"}");
        config.add("quantization_config", block);
        JsonObject parsed = ModelFamilies.parse(config).toJson();
        parsed.remove(QuantizationConfig.KEY);
        assertEquals(ModelFamilies.parse(json(LLAMA_3_2_1B)).toJson(), parsed);
        assertEquals(
                "nf4, compute float32, stored as uint8", QuantizationConfig.of(config).describe());
        block.addProperty("load_in_8bit", true);
        String message =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(config))
                        .getMessage();
        assertTrue(message.startsWith("quantization_config.load_in_8bit true"), message);
    }

    private static JsonObject json(String text) {
        return JsonParser.parseString(text).getAsJsonObject();
    }
}
