package ai.djl.fsdp.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.fsdp.zoo.finetune.args.FsdpArguments;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The units a causal LM is cut into by default ({@link CausalLM#defaultWrapPolicy}): the decoder
 * layers, and an untied token embedding and head each alone, the root keeping the final norm; a
 * tied embedding and head stay in the root. An explicit list of classes wraps those classes only.
 */
class DefaultWrapPolicyTest {

    private static CausalLM llama(boolean tied) {
        JsonObject json =
                JsonParser.parseString(
                                "{\"model_type\": \"llama\", \"architectures\":"
                                        + " [\"LlamaForCausalLM\"], \"hidden_size\": 16,"
                                        + " \"intermediate_size\": 32, \"num_hidden_layers\": 2,"
                                        + " \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
                                        + " \"vocab_size\": 50, \"max_position_embeddings\": 32,"
                                        + " \"tie_word_embeddings\": "
                                        + tied
                                        + "}")
                        .getAsJsonObject();
        return Models.forCheckpoint(ModelFamilies.parse(json));
    }

    private static List<String> unitNames(CausalLM lm, WrapPolicy policy) {
        return UnitPlan.of(lm, policy, UnitPlan::isBuffer).getUnits().stream()
                .map(UnitPlan.PlannedUnit::name)
                .toList();
    }

    private static List<String> rootParameters(CausalLM lm, WrapPolicy policy) {
        return UnitPlan.of(lm, policy, UnitPlan::isBuffer).getUnits().get(0).parameters().stream()
                .map(Parameter::getName)
                .toList();
    }

    @Test
    void untiedEmbeddingAndHeadAreUnitsOfTheirOwn() {
        CausalLM lm = llama(false);
        WrapPolicy policy = lm.defaultWrapPolicy();
        assertEquals(
                List.of(
                        "root",
                        "model.embed_tokens",
                        "model.layers.0",
                        "model.layers.1",
                        "lm_head"),
                unitNames(lm, policy));
        // The final norm's weight alone.
        assertEquals(List.of("weight"), rootParameters(lm, policy));
    }

    @Test
    void inTrainingAnUntiedHeadIsAUnitOnlyWhileItsLogitsCostLessThanItsWeight() {
        CausalLM lm = llama(false);
        // Width 16: three [tokens, 50] arrays of logits against one [50, 16] weight.
        assertEquals(unitNames(lm, lm.defaultWrapPolicy()), unitNames(lm, lm.defaultWrapPolicy(5)));
        assertEquals(
                List.of("root", "model.embed_tokens", "model.layers.0", "model.layers.1"),
                unitNames(lm, lm.defaultWrapPolicy(6)));
        // The root holds the head's weight and the final norm's.
        assertEquals(
                List.of(new Shape(16), new Shape(50, 16)),
                UnitPlan.of(lm, lm.defaultWrapPolicy(6), UnitPlan::isBuffer)
                        .getUnits()
                        .get(0)
                        .parameters()
                        .stream()
                        .map(Parameter::getShape)
                        .sorted((a, b) -> a.dimension() - b.dimension())
                        .toList());
        FsdpArguments flags = new FsdpArguments();
        assertEquals(
                unitNames(lm, lm.defaultWrapPolicy(6)), unitNames(lm, flags.wrapPolicy(lm, 6)));
    }

    @Test
    void tiedEmbeddingAndHeadStayInTheRoot() {
        CausalLM lm = llama(true);
        assertEquals(
                List.of("root", "model.layers.0", "model.layers.1"),
                unitNames(lm, lm.defaultWrapPolicy()));
        CausalLM gpt2 = Models.forCheckpoint(Models.builtin("gpt2-tiny"));
        assertEquals(
                List.of("root", "transformer.h.0", "transformer.h.1"),
                unitNames(gpt2, gpt2.defaultWrapPolicy()));
    }

    @Test
    void anAdaptedHeadIsWrappedWithItsAdapter() {
        CausalLM lm = llama(false);
        Lora.apply(lm, LoraConfig.builder().setTargetModules(List.of("q_proj", "lm_head")).build());
        UnitPlan plan = UnitPlan.of(lm, lm.defaultWrapPolicy(), UnitPlan::isBuffer);
        UnitPlan.PlannedUnit head = plan.getUnits().get(plan.getUnits().size() - 1);
        assertEquals("lm_head", head.name());
        assertEquals(LoraLinear.class, head.block().getClass());
        assertEquals(2, head.parameters(true).size());
    }

    @Test
    void anExplicitListWrapsOnlyItsClasses() {
        CausalLM lm = llama(false);
        FsdpArguments flags = new FsdpArguments();
        flags.layerClassesToWrap = List.of("LlamaDecoderLayer");
        assertEquals(
                List.of("root", "model.layers.0", "model.layers.1"),
                unitNames(lm, flags.wrapPolicy(lm, 0)));
        flags.layerClassesToWrap = List.of("LlamaDecoderLayer", "Embedding");
        assertEquals(
                List.of("root", "model.embed_tokens", "model.layers.0", "model.layers.1"),
                unitNames(lm, flags.wrapPolicy(lm, 0)));
        flags.layerClassesToWrap = null;
        assertEquals(unitNames(lm, lm.defaultWrapPolicy()), unitNames(lm, flags.wrapPolicy(lm, 0)));
    }

    /**
     * A class the model lacks is refused naming the flag; a qualified name is matched as the policy
     * matches it, whole, so another package's class of the same simple name is refused too.
     */
    @Test
    void aClassTheModelLacksNamesTheFlagAndTheDecoderLayer() {
        CausalLM lm = llama(false);
        FsdpArguments flags = new FsdpArguments();
        flags.layerClassesToWrap =
                List.of("LlamaDecoderLayer", "a.b.LlamaDecoderLayer", "LlamaMLPx");
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> flags.wrapPolicy(lm, 0));
        assertEquals(
                "--fsdp_transformer_layer_cls_to_wrap a.b.LlamaDecoderLayer,LlamaMLPx: the model"
                        + " has no layer of that class. Its layer classes: Embedding, Linear,"
                        + " LlamaAttention, LlamaDecoderLayer, LlamaMLP, LlamaModel, LlamaRMSNorm,"
                        + " ModuleList. Name the repeated decoder layer, LlamaDecoderLayer, or"
                        + " leave the flag (fsdp_transformer_layer_cls_to_wrap in --config_file)"
                        + " out to get it",
                error.getMessage());
    }
}
