package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The registry reads the {@code config.json} of released T5 models (shapes as published: t5-small
 * and flan-t5-base, with their legacy keys), and refuses a missing key or a setting it does not
 * compute in one line naming the key.
 */
class T5ConfigTest {

    private static final String T5_SMALL =
            """
            {"architectures": ["T5ForConditionalGeneration"], "d_ff": 2048, "d_kv": 64,
             "d_model": 512, "decoder_start_token_id": 0, "dropout_rate": 0.1,
             "eos_token_id": 1, "initializer_factor": 1.0, "is_encoder_decoder": true,
             "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512,
             "num_heads": 8, "num_layers": 6, "output_past": true, "pad_token_id": 0,
             "relative_attention_num_buckets": 32,
             "task_specific_params": {"summarization": {"prefix": "summarize: "}},
             "vocab_size": 32128}
            """;

    private static final String FLAN_T5_BASE =
            """
            {"architectures": ["T5ForConditionalGeneration"], "d_ff": 2048, "d_kv": 64,
             "d_model": 768, "decoder_start_token_id": 0, "dense_act_fn": "gelu_new",
             "dropout_rate": 0.1, "eos_token_id": 1, "feed_forward_proj": "gated-gelu",
             "initializer_factor": 1.0, "is_encoder_decoder": true, "is_gated_act": true,
             "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512,
             "num_decoder_layers": 12, "num_heads": 12, "num_layers": 12, "output_past": true,
             "pad_token_id": 0, "relative_attention_max_distance": 128,
             "relative_attention_num_buckets": 32, "tie_word_embeddings": false,
             "torch_dtype": "float32", "transformers_version": "4.23.1", "use_cache": true,
             "vocab_size": 32128}
            """;

    @Test
    void releasedConfigsLoad() {
        T5Config small = (T5Config) ModelFamilies.parse(json(T5_SMALL));
        assertTrue(small.tieWordEmbeddings());
        assertFalse(small.gatedFeedForward());
        assertEquals(6, small.numDecoderLayers());
        assertEquals(128, small.relativeAttentionMaxDistance());
        assertEquals(List.of(1L), small.eosTokenIds());
        T5Config flan = (T5Config) ModelFamilies.parse(json(FLAN_T5_BASE));
        assertFalse(flan.tieWordEmbeddings());
        assertTrue(flan.gatedFeedForward());
        assertEquals(768, flan.hiddenSize());
        assertEquals(12, flan.numHeads());
        // Written back, read again: the same configuration.
        assertEquals(flan.toJson(), ModelFamilies.parse(flan.toJson()).toJson());
        assertEquals(
                "T5ForConditionalGeneration",
                flan.toJson().getAsJsonArray("architectures").get(0).getAsString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"d_model", "d_kv", "num_layers", "decoder_start_token_id"})
    void aMissingKeyIsNamed(String key) {
        JsonObject config = json(T5_SMALL);
        config.remove(key);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(config));
        assertTrue(e.getMessage().contains(key), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "feed_forward_proj|\"gated-silu\"|feed_forward_proj \"gated-silu\" is not"
                        + " supported",
                "is_encoder_decoder|false|is_encoder_decoder false is not supported",
                "tie_encoder_decoder|true|tie_encoder_decoder true is not supported",
                "relative_attention_num_buckets|2|relative_attention_num_buckets 2 must be",
                "relative_attention_max_distance|16|relative_attention_max_distance 16",
                "num_heads|0|\"num_heads\" must be a positive integer"
            })
    void anUnsupportedSettingIsNamed(String key, String value, String message) {
        JsonObject config = json(T5_SMALL);
        config.add(key, JsonParser.parseString(value));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(config));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    }

    @Test
    void decoderOnlyEntryPointsRefuseT5ByName() {
        ModelConfig config = ModelFamilies.parse(json(T5_SMALL));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Models.forCheckpoint(config));
        assertTrue(
                e.getMessage()
                        .contains("t5 is an encoder-decoder model (T5ForConditionalGeneration)"),
                e.getMessage());
    }

    private static JsonObject json(String text) {
        return JsonParser.parseString(text).getAsJsonObject();
    }
}
