package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.t5.T5Config;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The Block trees carry exactly Hugging Face's module classes and parameter names. */
class ParameterNamesTest {

    @Test
    void gpt2NamesAreHuggingFaces() {
        CausalLM model = GPT2Config.of(2, 64, 4, 256).newModel();
        List<String> expected =
                new ArrayList<>(List.of("transformer.wte.weight", "transformer.wpe.weight"));
        for (int i = 0; i < 2; i++) {
            String p = "transformer.h." + i + '.';
            expected.addAll(
                    List.of(
                            p + "ln_1.weight", p + "ln_1.bias",
                            p + "attn.c_attn.weight", p + "attn.c_attn.bias",
                            p + "attn.c_proj.weight", p + "attn.c_proj.bias",
                            p + "ln_2.weight", p + "ln_2.bias",
                            p + "mlp.c_fc.weight", p + "mlp.c_fc.bias",
                            p + "mlp.c_proj.weight", p + "mlp.c_proj.bias"));
        }
        expected.addAll(List.of("transformer.ln_f.weight", "transformer.ln_f.bias"));
        assertEquals(expected, new ArrayList<>(StateDict.parameters(model).keySet()));
        assertEquals(Map.of("lm_head.weight", "transformer.wte.weight"), StateDict.aliases(model));
        assertEquals(
                "GPT2Block",
                StateDict.modules(model).get("transformer.h.1").getClass().getSimpleName());
    }

    @Test
    void llamaNamesAreHuggingFaces() {
        CausalLM model = LlamaConfig.of(2, 64, 4, 2, 128, 256).newModel();
        List<String> expected = new ArrayList<>(List.of("model.embed_tokens.weight"));
        for (int i = 0; i < 2; i++) {
            String p = "model.layers." + i + '.';
            expected.addAll(
                    List.of(
                            p + "self_attn.q_proj.weight",
                            p + "self_attn.k_proj.weight",
                            p + "self_attn.v_proj.weight",
                            p + "self_attn.o_proj.weight",
                            p + "mlp.gate_proj.weight",
                            p + "mlp.up_proj.weight",
                            p + "mlp.down_proj.weight",
                            p + "input_layernorm.weight",
                            p + "post_attention_layernorm.weight"));
        }
        expected.addAll(List.of("model.norm.weight", "lm_head.weight"));
        Map<String, Parameter> parameters = StateDict.parameters(model);
        assertEquals(expected, new ArrayList<>(parameters.keySet()));
        assertEquals(
                List.of(64L, 32L),
                List.of(
                        parameters.get("model.layers.0.self_attn.q_proj.weight").getShape().get(0),
                        parameters
                                .get("model.layers.0.self_attn.k_proj.weight")
                                .getShape()
                                .get(0)));
        Block layer = StateDict.modules(model).get("model.layers.0");
        assertEquals("LlamaDecoderLayer", layer.getClass().getSimpleName());
    }

    @Test
    void tiedLlamaHeadSharesTheEmbeddingParameter() {
        JsonObject json = LlamaConfig.of(1, 32, 2, 2, 64, 64).toJson();
        json.addProperty("tie_word_embeddings", true);
        CausalLM model = LlamaConfig.fromJson(json).newModel();
        Map<String, Block> modules = StateDict.modules(model);
        assertSame(
                modules.get("model.embed_tokens").getDirectParameters().get("weight"),
                modules.get("lm_head").getDirectParameters().get("weight"));
        assertEquals(
                Map.of("lm_head.weight", "model.embed_tokens.weight"), StateDict.aliases(model));
    }

    @Test
    void t5NamesAreHuggingFaces() {
        PretrainedModel model = T5Config.of(32, 16, 2, 24, 2, 1, "gated-gelu").newModel();
        List<String> expected = new ArrayList<>(List.of("shared.weight"));
        for (String stack : new String[] {"encoder", "decoder"}) {
            int blocks = stack.equals("encoder") ? 2 : 1;
            for (int i = 0; i < blocks; i++) {
                String p = stack + ".block." + i + ".layer.";
                List<String> attentions =
                        stack.equals("encoder")
                                ? List.of("SelfAttention")
                                : List.of("SelfAttention", "EncDecAttention");
                for (int j = 0; j < attentions.size(); j++) {
                    String a = p + j + '.' + attentions.get(j) + '.';
                    expected.addAll(
                            List.of(
                                    a + "q.weight",
                                    a + "k.weight",
                                    a + "v.weight",
                                    a + "o.weight"));
                    if (i == 0 && j == 0) {
                        expected.add(a + "relative_attention_bias.weight");
                    }
                    expected.add(p + j + ".layer_norm.weight");
                }
                String f = p + attentions.size() + '.';
                expected.addAll(
                        List.of(
                                f + "DenseReluDense.wi_0.weight",
                                f + "DenseReluDense.wi_1.weight",
                                f + "DenseReluDense.wo.weight",
                                f + "layer_norm.weight"));
            }
            expected.add(stack + ".final_layer_norm.weight");
        }
        expected.add("lm_head.weight");
        assertEquals(expected, new ArrayList<>(StateDict.parameters(model).keySet()));
        assertEquals(
                Map.of(
                        "encoder.embed_tokens.weight", "shared.weight",
                        "decoder.embed_tokens.weight", "shared.weight"),
                StateDict.aliases(model));
        Map<String, Block> modules = StateDict.modules(model);
        assertEquals("T5Block", modules.get("encoder.block.1").getClass().getSimpleName());
        assertEquals("T5Block", modules.get("decoder.block.0").getClass().getSimpleName());
    }

    @Test
    void tiedT5HeadSharesTheTable() {
        PretrainedModel model = T5Config.of(32, 16, 2, 24, 1, 1, "relu").newModel();
        assertEquals(
                Map.of(
                        "encoder.embed_tokens.weight", "shared.weight",
                        "decoder.embed_tokens.weight", "shared.weight",
                        "lm_head.weight", "shared.weight"),
                StateDict.aliases(model));
        assertEquals(
                List.of(StateDict.parameters(model).get("shared.weight")),
                model.vocabularyParameters());
    }
}
