package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PEFT's {@code modules_to_save} beside LoRA adapters: the modules' parameters train whole, are
 * saved under {@code base_model.model.<parameter>} and loaded back; a module whose weight another
 * shares (GPT-2's head tied to {@code wte}) is saved once and not listed, since PEFT's wrapper
 * would untie it; a key PEFT's {@code save_embedding_layers} writes for a model parameter is read
 * into it.
 */
class ModulesToSaveTest {

    private static LoraConfig config(List<String> modules) {
        return LoraConfig.builder()
                .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                .optModulesToSave(modules)
                .build();
    }

    @Test
    void anUntiedEmbeddingAndHeadTrainAndTravelWithTheAdapters(@TempDir Path directory)
            throws Exception {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("llama-tiny", manager, 3);
            LoraConfig config = config(List.of("embed_tokens", "lm_head"));
            Lora.apply(model, config);
            Map<String, Parameter> parameters = StateDict.parameters(model);
            Parameter embedding = parameters.get("model.embed_tokens.weight");
            Parameter head = parameters.get("lm_head.weight");
            assertTrue(embedding.requiresGradient() && head.requiresGradient());
            assertFalse(parameters.get("model.norm.weight").requiresGradient());
            embedding.getArray().addi(1f); // as if trained
            Lora.save(model, config, directory);
            JsonObject saved =
                    JsonParser.parseString(Files.readString(directory.resolve(Lora.CONFIG_FILE)))
                            .getAsJsonObject();
            assertEquals("[\"embed_tokens\",\"lm_head\"]", saved.get("modules_to_save").toString());
            try (SafetensorsFile file =
                    SafetensorsFile.open(directory.resolve(Lora.WEIGHTS_FILE))) {
                assertTrue(file.getNames().contains("base_model.model.model.embed_tokens.weight"));
                assertTrue(file.getNames().contains("base_model.model.lm_head.weight"));
            }
            CausalLM fresh = TestModels.seeded("llama-tiny", manager, 4);
            assertEquals(config.getModulesToSave(), Lora.load(fresh, directory).getModulesToSave());
            Map<String, Parameter> loaded = StateDict.parameters(fresh);
            assertArrayEquals(
                    embedding.getArray().toFloatArray(),
                    loaded.get("model.embed_tokens.weight").getArray().toFloatArray());
            assertArrayEquals(
                    head.getArray().toFloatArray(),
                    loaded.get("lm_head.weight").getArray().toFloatArray());
        }
    }

    @Test
    void aTiedEmbeddingIsSavedOnceAndNotListed(@TempDir Path directory) throws Exception {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 3);
            LoraConfig config = config(List.of("wte", "lm_head"));
            Lora.apply(model, config);
            Parameter table = StateDict.parameters(model).get("transformer.wte.weight");
            assertTrue(table.requiresGradient());
            table.getArray().muli(2f);
            Lora.save(model, config, directory);
            JsonObject saved =
                    JsonParser.parseString(Files.readString(directory.resolve(Lora.CONFIG_FILE)))
                            .getAsJsonObject();
            assertFalse(saved.has("modules_to_save"), saved.toString());
            try (SafetensorsFile file =
                    SafetensorsFile.open(directory.resolve(Lora.WEIGHTS_FILE))) {
                assertTrue(file.getNames().contains("base_model.model.transformer.wte.weight"));
                assertFalse(file.getNames().contains("base_model.model.lm_head.weight"));
            }
            // Read back without modules_to_save: the key names a parameter, which takes it.
            CausalLM fresh = TestModels.seeded("gpt2-tiny", manager, 4);
            Lora.load(fresh, directory);
            assertArrayEquals(
                    table.getArray().toFloatArray(),
                    StateDict.parameters(fresh)
                            .get("transformer.wte.weight")
                            .getArray()
                            .toFloatArray());
        }
    }

    @Test
    void aKeyOfNoParameterIsUnexpected(@TempDir Path directory) throws Exception {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 3);
            LoraConfig config = config(List.of());
            Lora.apply(model, config);
            Lora.save(model, config, directory);
            Path weights = directory.resolve(Lora.WEIGHTS_FILE);
            SafetensorsWriter writer = new SafetensorsWriter();
            try (SafetensorsFile file = SafetensorsFile.open(weights)) {
                for (String name : file.getNames()) {
                    writer.add(name, file.read(manager, name));
                }
            }
            writer.add("base_model.model.transformer.nothing.weight", manager.ones(new Shape(2)));
            writer.write(weights);
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> Lora.load(TestModels.seeded("gpt2-tiny", manager, 4), directory));
            assertTrue(
                    e.getMessage()
                            .contains("unexpected [base_model.model.transformer.nothing.weight]"),
                    e.getMessage());
        }
    }
}
