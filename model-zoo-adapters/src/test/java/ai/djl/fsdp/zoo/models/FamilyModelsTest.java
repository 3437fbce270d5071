package ai.djl.fsdp.zoo.models;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.llama.LlamaConfig;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The families built on Llama's block as models: Hugging Face's names in and out, the decoder layer
 * FSDP wraps by name, LoRA targets, and generation with the key-value cache (a sliding window
 * shorter than the sequence, llama3 RoPE past its original length) computing what the full forward
 * computes, with both attention kernels; bfloat16 weights (0.5-0.9% from float32 on these models)
 * in both kernels.
 */
class FamilyModelsTest {

    /** Small models with each family's features on; windows and RoPE lengths below 9 tokens. */
    private static ModelConfig tiny(String family) {
        JsonObject json = LlamaConfig.of(2, 64, 4, 2, 128, 256).toJson();
        json.addProperty("model_type", family.replace("llama3", "llama"));
        switch (family) {
            case "llama3" -> {
                json.add(
                        "rope_scaling",
                        JsonParser.parseString(
                                "{\"rope_type\": \"llama3\", \"factor\": 8.0,"
                                        + " \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
                                        + " \"original_max_position_embeddings\": 4}"));
                json.addProperty("mlp_bias", true);
            }
            case "mistral" -> json.addProperty("sliding_window", 3);
            case "qwen2" -> json.addProperty("tie_word_embeddings", true);
            case "qwen3" -> json.addProperty("head_dim", 32);
            default -> throw new IllegalArgumentException(family);
        }
        return ModelFamilies.parse(json);
    }

    private static CausalLM seeded(String family, NDManager manager) {
        Engine.getEngine("PyTorch").setRandomSeed(5);
        return Models.create(tiny(family), manager);
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama3", "mistral", "qwen2", "qwen3"})
    void cachedDecodingMatchesTheFullForward(String family) {
        for (AttentionKernel kernel : AttentionKernel.values()) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = seeded(family, manager);
                kernel.applyTo(model);
                NDArray ids = TestModels.tokens(manager, 2, 9, 3);
                NDArray full = TestModels.logits(model, ids, null);
                ParameterStore ps = new ParameterStore(manager, false);
                try (KvCache cache = new KvCache(manager, model.getConfig().numLayers())) {
                    NDArray prefill = model.forward(ps, ids.get(":, :5"), null, cache, false);
                    assertTrue(TestModels.maxDiff(prefill, full.get(":, :5")) < 1e-5f);
                    for (int t = 5; t < 9; t++) {
                        NDIndex next = new NDIndex(":, {}:{}", t, t + 1);
                        NDArray step = model.forward(ps, ids.get(next), null, cache, false);
                        float diff = TestModels.maxDiff(step, full.get(next));
                        assertTrue(diff < 1e-5f, family + " position " + t + ": " + diff);
                    }
                }
            }
        }
    }

    /**
     * What {@code generate} runs on a batch of prompts of different lengths: left padding, the
     * key-value cache and a window shorter than the prompt, all at once.
     */
    @Test
    void slidingWindowWithPaddingAndCacheMatchesTheFullForward() {
        for (AttentionKernel kernel : AttentionKernel.values()) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = seeded("mistral", manager);
                kernel.applyTo(model);
                NDArray ids = TestModels.tokens(manager, 2, 10, 6);
                // Row 0 has 3 padding positions on the left, row 1 none.
                NDArray mask =
                        manager.create(
                                        new long[] {
                                            0, 0, 0, 1, 1, 1, 1, 1, 1, 1, //
                                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1
                                        })
                                .reshape(2, 10);
                NDArray full = TestModels.logits(model, ids, mask);
                ParameterStore ps = new ParameterStore(manager, false);
                try (KvCache cache = new KvCache(manager, model.getConfig().numLayers())) {
                    NDArray prefill =
                            model.forward(ps, ids.get(":, :6"), mask.get(":, :6"), cache, false);
                    // Padded positions' logits are not defined; compare the real tokens.
                    assertTrue(
                            TestModels.maxDiff(prefill.get("0, 3:"), full.get("0, 3:6")) < 1e-5f);
                    assertTrue(TestModels.maxDiff(prefill.get("1"), full.get("1, :6")) < 1e-5f);
                    for (int t = 6; t < 10; t++) {
                        NDIndex next = new NDIndex(":, {}:{}", t, t + 1);
                        NDArray seen = mask.get(new NDIndex(":, :{}", t + 1));
                        NDArray step = model.forward(ps, ids.get(next), seen, cache, false);
                        float diff = TestModels.maxDiff(step, full.get(next));
                        assertTrue(diff < 1e-5f, kernel.getName() + " position " + t + ": " + diff);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama3", "mistral", "qwen2", "qwen3"})
    void bfloat16FollowsFloat32(String family) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = seeded(family, manager);
            NDArray ids = TestModels.tokens(manager, 2, 9, 4);
            NDArray reference = TestModels.logits(model, ids, null);
            float scale = reference.abs().max().getFloat();
            // Every parameter read in bfloat16 (made through the shim: DJL cannot create it).
            Map<String, NDArray> casts = new HashMap<>();
            ParameterStore bf16 =
                    new ParameterStore(manager, false) {
                        @Override
                        public NDArray getValue(Parameter p, Device device, boolean training) {
                            return casts.computeIfAbsent(
                                    p.getId(), id -> Precision.BFLOAT16.cast(p.getArray()));
                        }
                    };
            for (AttentionKernel kernel : AttentionKernel.values()) {
                kernel.applyTo(model);
                NDArray logits = model.forward(bf16, ids, null, null, false);
                assertEquals(Precision.BFLOAT16, Precision.ofArray(logits));
                float relative = TestModels.maxDiff(logits, reference) / scale;
                assertTrue(relative < 2e-2f, family + " " + kernel.getName() + ": " + relative);
            }
        }
    }

    @Test
    void slidingWindowHidesKeysOutsideIt() {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = seeded("mistral", manager);
            NDArray ids = TestModels.tokens(manager, 1, 8, 9);
            NDArray logits = TestModels.logits(model, ids, null);
            // Changing token 0 changes nothing from position 5 on: a window of 3 reaches 2
            // positions back in each of the 2 layers.
            NDArray changed = ids.duplicate();
            changed.set(new NDIndex("0, 0"), (ids.getLong(0, 0) + 1) % 50257);
            NDArray other = TestModels.logits(model, changed, null);
            assertEquals(0f, TestModels.maxDiff(logits.get(":, 5:"), other.get(":, 5:")));
            assertTrue(TestModels.maxDiff(logits.get(":, 4"), other.get(":, 4")) > 1e-6f);
            // Left padding: the real tokens compute what they compute alone, both kernels.
            NDArray padded = manager.zeros(new Shape(1, 2), ids.getDataType()).concat(ids, 1);
            NDArray mask = manager.create(new long[] {0, 0, 1, 1, 1, 1, 1, 1, 1, 1}).reshape(1, 10);
            for (AttentionKernel kernel : AttentionKernel.values()) {
                kernel.applyTo(model);
                NDArray batched = TestModels.logits(model, padded, mask);
                assertTrue(TestModels.maxDiff(batched.get(":, 2:"), logits) < 1e-5f);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama3", "mistral", "qwen2", "qwen3"})
    void checkpointRoundTripKeepsNamesConfigAndLogits(String family, @TempDir Path dir)
            throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = seeded(family, manager);
            HfCheckpoint.save(model, dir);
            JsonObject saved =
                    JsonParser.parseString(Files.readString(dir.resolve(ConfigJson.FILE)))
                            .getAsJsonObject();
            String modelType = model.getConfig().modelType();
            assertEquals(modelType, saved.get("model_type").getAsString());
            assertEquals(
                    ModelFamilies.of(modelType).architecture(),
                    saved.getAsJsonArray("architectures").get(0).getAsString());
            CausalLM loaded = Models.load(dir, manager);
            assertEquals(model.getClass(), loaded.getClass());
            NDArray ids = TestModels.tokens(manager, 1, 7, 1);
            assertEquals(
                    0f,
                    TestModels.maxDiff(
                            TestModels.logits(model, ids, null),
                            TestModels.logits(loaded, ids, null)));
        }
    }

    @Test
    void parameterNamesAreHuggingFaces() {
        try (NDManager manager = TestModels.newManager()) {
            Map<String, ?> qwen3 = StateDict.parameters(seeded("qwen3", manager));
            assertTrue(qwen3.containsKey("model.layers.1.self_attn.q_norm.weight"));
            assertTrue(qwen3.containsKey("model.layers.1.self_attn.k_norm.weight"));
            assertEquals(
                    new Shape(32),
                    StateDict.parameters(seeded("qwen3", manager))
                            .get("model.layers.0.self_attn.k_norm.weight")
                            .getShape());
            assertEquals(
                    new Shape(4 * 32, 64),
                    StateDict.parameters(seeded("qwen3", manager))
                            .get("model.layers.0.self_attn.q_proj.weight")
                            .getShape());
            assertFalse(qwen3.containsKey("model.layers.0.self_attn.q_proj.bias"));

            CausalLM qwen2Model = seeded("qwen2", manager);
            Map<String, ?> qwen2 = StateDict.parameters(qwen2Model);
            for (String p : List.of("q_proj", "k_proj", "v_proj")) {
                assertTrue(qwen2.containsKey("model.layers.0.self_attn." + p + ".bias"), p);
            }
            assertFalse(qwen2.containsKey("model.layers.0.self_attn.o_proj.bias"));
            assertEquals(
                    "model.embed_tokens.weight",
                    StateDict.aliases(qwen2Model).get("lm_head.weight"));

            Map<String, ?> llama3 = StateDict.parameters(seeded("llama3", manager));
            assertTrue(llama3.containsKey("model.layers.0.mlp.down_proj.bias"));
            assertTrue(llama3.containsKey("lm_head.weight"));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"mistral", "qwen2", "qwen3"})
    void fsdpWrapsTheFamilysOwnLayerAndLoraTargetsItsLinears(String family) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = seeded(family, manager);
            String layer = model.decoderLayerClass().getSimpleName();
            assertEquals(
                    family.substring(0, 1).toUpperCase() + family.substring(1) + "DecoderLayer",
                    layer);
            WrapPolicy byName = WrapPolicy.byLayerClass(layer);
            WrapPolicy llama = WrapPolicy.byLayerClass("LlamaDecoderLayer");
            long units = 0;
            for (Block block : StateDict.modules(model).values()) {
                units += byName.shouldWrap(block) ? 1 : 0;
                assertFalse(llama.shouldWrap(block), "a LlamaDecoderLayer policy wraps " + layer);
            }
            assertEquals(2, units);

            List<String> all =
                    Lora.apply(
                            model,
                            LoraConfig.builder()
                                    .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                                    .optRank(2)
                                    .build());
            assertEquals(14, all.size(), all.toString());
            assertTrue(all.stream().noneMatch(n -> n.contains("norm") || n.contains("lm_head")));
            CausalLM fresh = seeded(family, manager);
            List<String> attention =
                    Lora.apply(
                            fresh,
                            LoraConfig.builder()
                                    .setTargetModules(List.of("q_proj", "v_proj"))
                                    .optRank(2)
                                    .build());
            assertEquals(
                    List.of(
                            "model.layers.0.self_attn.q_proj",
                            "model.layers.0.self_attn.v_proj",
                            "model.layers.1.self_attn.q_proj",
                            "model.layers.1.self_attn.v_proj"),
                    attention);
        }
    }
}
