package ai.djl.fsdp.zoo.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HfCheckpointTest {

    @TempDir Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"gpt2-tiny", "llama-tiny"})
    void saveThenLoadIsBitIdentical(String name) throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM original = TestModels.seeded(name, manager, 1);
            HfCheckpoint.save(original, dir);
            assertEquals(original.getConfig().toJson(), ModelFamilies.read(dir).toJson());

            CausalLM loaded = Models.load(dir, manager);
            Map<String, Parameter> before = StateDict.parameters(original);
            Map<String, Parameter> after = StateDict.parameters(loaded);
            assertEquals(before.keySet(), after.keySet());
            before.forEach(
                    (key, p) ->
                            assertArrayEquals(
                                    p.getArray().toByteArray(),
                                    after.get(key).getArray().toByteArray(),
                                    key));
            NDArray ids = TestModels.tokens(manager, 1, 5, 2);
            assertEquals(
                    0f,
                    TestModels.maxDiff(
                            TestModels.logits(original, ids, null),
                            TestModels.logits(loaded, ids, null)));
        }
    }

    @Test
    void tiedHeadIsStoredOnceAndLoadsEitherWay() throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 2);
            HfCheckpoint.save(model, dir);
            try (SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint.open(dir)) {
                assertTrue(checkpoint.contains("transformer.wte.weight"));
                assertTrue(!checkpoint.contains("lm_head.weight"));
            }
            // GPT-2's hub checkpoint: names without "transformer.", the head under lm_head only,
            // plus the causal-mask buffers; Hugging Face loads it, so must we.
            Path hub = dir.resolve("hub");
            SafetensorsWriter writer = new SafetensorsWriter();
            StateDict.parameters(model)
                    .forEach(
                            (key, p) ->
                                    writer.add(
                                            key.equals("transformer.wte.weight")
                                                    ? "lm_head.weight"
                                                    : key.substring("transformer.".length()),
                                            p.getArray()));
            writer.add("h.0.attn.bias", manager.ones(new Shape(1, 1, 4, 4)));
            writer.writeCheckpoint(hub, Long.MAX_VALUE);
            ConfigJson.write(model.getConfig(), hub);
            CausalLM loaded = Models.load(hub, manager);
            NDArray ids = TestModels.tokens(manager, 1, 4, 3);
            assertEquals(
                    0f,
                    TestModels.maxDiff(
                            TestModels.logits(model, ids, null),
                            TestModels.logits(loaded, ids, null)));
        }
    }

    @Test
    void shardedCheckpointLoads() throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("llama-tiny", manager, 3);
            HfCheckpoint.save(model, dir, 4_000_000);
            assertTrue(Files.exists(dir.resolve(SafetensorsCheckpoint.INDEX_FILE)));
            CausalLM loaded = Models.load(dir, manager);
            NDArray ids = TestModels.tokens(manager, 1, 4, 3);
            assertEquals(
                    0f,
                    TestModels.maxDiff(
                            TestModels.logits(model, ids, null),
                            TestModels.logits(loaded, ids, null)));
        }
    }

    @Test
    void checkpointOfAnotherModelIsAnError() throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            HfCheckpoint.save(TestModels.seeded("llama-tiny", manager, 4), dir);
            CausalLM gpt2 = Models.create(Models.builtin("gpt2-tiny"), manager);
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class, () -> HfCheckpoint.load(gpt2, dir));
            assertTrue(
                    e.getMessage().contains("missing 27 [transformer.h.0.attn.c_attn.bias"),
                    e.getMessage());
            assertTrue(
                    e.getMessage()
                            .contains(
                                    "unexpected 20 [model.embed_tokens.weight,"
                                            + " model.layers.0.input_layernorm.weight"),
                    e.getMessage());

            CausalLM wider = Models.create(GPT2Config.of(2, 128, 4, 256), manager);
            HfCheckpoint.save(wider, dir.resolve("wide"));
            CausalLM narrow = Models.create(Models.builtin("gpt2-tiny"), manager);
            e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> HfCheckpoint.load(narrow, dir.resolve("wide")));
            assertTrue(
                    e.getMessage().contains("shape mismatch for transformer.wte.weight"),
                    e.getMessage());
        }
    }

    @Test
    void shardSourceChecksShapesOfAModelNotYetInitialized() throws IOException {
        String projection = "transformer.h.0.mlp.c_fc.weight";
        try (NDManager manager = TestModels.newManager()) {
            // A checkpoint whose one projection has a shape other than its config says.
            CausalLM model = Models.create(Models.builtin("gpt2-tiny"), manager);
            SafetensorsWriter writer = new SafetensorsWriter();
            StateDict.parameters(model)
                    .forEach(
                            (key, p) ->
                                    writer.add(
                                            key,
                                            key.equals(projection)
                                                    ? manager.zeros(new Shape(64, 128))
                                                    : p.getArray()));
            writer.writeCheckpoint(dir, Long.MAX_VALUE);
            // The zoo's blocks have their parameters' shapes before initialization.
            CausalLM empty = Models.forCheckpoint(Models.builtin("gpt2-tiny"));
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> HfCheckpoint.shardSource(empty, dir));
            assertEquals(
                    "shape mismatch for "
                            + projection
                            + ": the model has (64, 256), the checkpoint (64, 128)",
                    e.getMessage());
        }
    }

    @Test
    void configRequiresArchitectureKeysAndIgnoresUnknownOnes() {
        JsonObject json = GPT2Config.of(2, 64, 4, 256).toJson();
        json.addProperty("some_future_key", 3);
        json.addProperty("n_layer", 5);
        assertEquals(5, ModelFamilies.parse(json).numLayers());
        json.remove("n_head");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(json));
        assertTrue(e.getMessage().contains("lacks required keys [n_head]"), e.getMessage());
        json.addProperty("model_type", "bert");
        e = assertThrows(IllegalArgumentException.class, () -> ModelFamilies.parse(json));
        assertTrue(e.getMessage().contains("not supported"), e.getMessage());
    }
}
