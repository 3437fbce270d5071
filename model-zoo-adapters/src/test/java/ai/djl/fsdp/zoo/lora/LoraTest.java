package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.lora.ParameterCount;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.GradientCollector;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** LoRA on the zoo's GPT-2 and Llama: PEFT's init, training only the adapters, merging, files. */
class LoraTest {

    private static final LoraConfig GPT2_LORA =
            LoraConfig.builder()
                    .setTargetModules(List.of("c_attn", "c_fc", "c_proj"))
                    .optRank(4)
                    .optAlpha(8)
                    .build();
    private static final LoraConfig ALL_LINEAR =
            LoraConfig.builder()
                    .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                    .optRank(2)
                    .optAlpha(4)
                    .optDropout(0.1f)
                    .build();

    @TempDir Path dir;

    @Test
    void freshAdaptersLeaveTheLogitsExactlyAsTheBase() {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = TestModels.seeded(name, manager, 5);
                NDArray ids = TestModels.tokens(manager, 2, 6, 1);
                NDArray base = TestModels.logits(model, ids, null);
                List<String> adapted =
                        Lora.apply(model, name.startsWith("gpt2") ? GPT2_LORA : ALL_LINEAR);
                assertFalse(adapted.contains("lm_head"), "all-linear leaves the output head alone");
                assertEquals(
                        0f, TestModels.maxDiff(base, TestModels.logits(model, ids, null)), name);
            }
        }
    }

    @Test
    void onlyAdaptersTrainAndTheMergedModelComputesTheSame() {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = TestModels.seeded(name, manager, 6);
                List<String> adapted =
                        Lora.apply(model, name.startsWith("gpt2") ? GPT2_LORA : ALL_LINEAR);
                Map<String, Parameter> parameters = StateDict.parameters(model);
                String baseWeight = adapted.get(0) + ".base_layer.weight";
                byte[] baseBefore = parameters.get(baseWeight).getArray().toByteArray();

                train(model, manager, 3);

                assertArrayEquals(
                        baseBefore,
                        parameters.get(baseWeight).getArray().toByteArray(),
                        "base stays frozen");
                NDArray loraB = parameters.get(adapted.get(0) + ".lora_B.weight").getArray();
                assertTrue(loraB.abs().sum().getFloat() > 0, "the adapters trained");

                NDArray ids = TestModels.tokens(manager, 2, 7, 2);
                NDArray adaptedLogits = TestModels.logits(model, ids, null);
                assertTrue(
                        adaptedLogits
                                .isNaN()
                                .logicalOr(adaptedLogits.isInfinite())
                                .none()
                                .getBoolean(),
                        "finite logits");
                assertEquals(adapted, Lora.merge(model));
                assertTrue(Lora.adapters(model).isEmpty());
                assertTrue(
                        StateDict.parameters(model).containsKey(adapted.get(0) + ".weight"),
                        "plain names again");
                float diff = TestModels.maxDiff(adaptedLogits, TestModels.logits(model, ids, null));
                assertTrue(diff < 1e-5f, name + " merged logits differ by " + diff);
            }
        }
    }

    @Test
    void adaptersRoundTripThroughPeftFiles() throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 8);
            Lora.apply(model, GPT2_LORA);
            train(model, manager, 2);
            Lora.save(model, GPT2_LORA, dir);

            JsonObject config =
                    JsonParser.parseString(Files.readString(dir.resolve(Lora.CONFIG_FILE)))
                            .getAsJsonObject();
            assertEquals("LORA", config.get("peft_type").getAsString());
            assertEquals(4, config.get("r").getAsInt());
            assertTrue(
                    config.get("fan_in_fan_out").getAsBoolean(), "GPT-2's Conv1D is input-major");
            try (SafetensorsFile file = SafetensorsFile.open(dir.resolve(Lora.WEIGHTS_FILE))) {
                assertTrue(
                        file.contains(
                                "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"));
                assertTrue(
                        file.contains("base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight"));
                assertEquals(2 * 4 * 2, file.getNames().size(), "2 layers, 4 projections, A and B");
            }

            reload(model, GPT2_LORA, 8, manager);

            CausalLM llama = TestModels.seeded("llama-tiny", manager, 8);
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> Lora.load(llama, dir));
            assertTrue(
                    e.getMessage()
                            .contains(
                                    "no module matches LoRA target_modules [c_attn, c_fc, c_proj]"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("q_proj"), e.getMessage());
        }
    }

    @Test
    void aDottedTargetIsSavedAsGivenAndReloadsOntoTheSameModules() throws IOException {
        LoraConfig attentionOnly =
                LoraConfig.builder()
                        .setTargetModules(List.of("attn.c_proj"))
                        .optRank(2)
                        .optAlpha(4)
                        .build();
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 9);
            List<String> adapted = Lora.apply(model, attentionOnly);
            assertEquals(
                    List.of("transformer.h.0.attn.c_proj", "transformer.h.1.attn.c_proj"),
                    adapted,
                    "the MLP's c_proj is not adapted");
            train(model, manager, 2);
            Lora.save(model, attentionOnly, dir);
            assertEquals("[\"attn.c_proj\"]", savedTargets(dir));

            CausalLM reloaded = reload(model, attentionOnly, 9, manager);
            assertEquals(adapted, List.copyOf(Lora.adapters(reloaded).keySet()));

            // all-linear is saved as the names it resolved to, as PEFT expands it.
            CausalLM allLinear = TestModels.seeded("gpt2-tiny", manager, 9);
            Lora.apply(allLinear, ALL_LINEAR);
            Path expanded = dir.resolve("all-linear");
            Lora.save(allLinear, ALL_LINEAR, expanded);
            assertEquals("[\"c_attn\",\"c_fc\",\"c_proj\"]", savedTargets(expanded));
        }
    }

    /**
     * Loads the adapters saved in {@link #dir} onto a fresh {@code gpt2-tiny} of {@code seed}: the
     * configuration read back is {@code config}, and the logits are {@code model}'s exactly.
     */
    private CausalLM reload(CausalLM model, LoraConfig config, int seed, NDManager manager)
            throws IOException {
        CausalLM reloaded = TestModels.seeded("gpt2-tiny", manager, seed);
        assertEquals(config.toString(), Lora.load(reloaded, dir).toString());
        NDArray ids = TestModels.tokens(manager, 1, 5, 3);
        assertEquals(
                0f,
                TestModels.maxDiff(
                        TestModels.logits(model, ids, null),
                        TestModels.logits(reloaded, ids, null)));
        return reloaded;
    }

    private static String savedTargets(Path adapters) throws IOException {
        return JsonParser.parseString(Files.readString(adapters.resolve(Lora.CONFIG_FILE)))
                .getAsJsonObject()
                .get("target_modules")
                .toString();
    }

    @Test
    void countsTrainableParametersLikePeft() {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 9);
            long all = Lora.count(model).all();
            LoraConfig attention =
                    LoraConfig.builder().setTargetModules(List.of("c_attn")).optRank(4).build();
            Lora.apply(model, attention);
            // Per layer: A [4, 64] and B [192, 4].
            long adapters = 2 * (4 * 64 + 192 * 4);
            ParameterCount count = Lora.count(model);
            assertEquals(new ParameterCount(adapters, all + adapters), count);
            assertEquals(
                    String.format(
                            java.util.Locale.ROOT,
                            "trainable params: 2,048 || all params: %,d || trainable%%: %.4f",
                            all + adapters,
                            100.0 * adapters / (all + adapters)),
                    count.toString());
            assertThrows(IllegalStateException.class, () -> Lora.apply(model, attention));
            assertTrue(
                    Lora.adapters(model).values().stream().allMatch(a -> a instanceof LoraLinear));
        }
    }

    /** A few plain SGD steps on a fixed linear loss, updating only what requires a gradient. */
    private static void train(CausalLM model, NDManager manager, int steps) {
        ParameterStore ps = new ParameterStore(manager, false);
        NDArray ids = TestModels.tokens(manager, 2, 6, 4);
        Engine.getEngine("PyTorch").setRandomSeed(3);
        NDArray direction =
                manager.randomNormal(
                        new ai.djl.ndarray.types.Shape(2, 6, model.getConfig().vocabSize()));
        for (int step = 0; step < steps; step++) {
            try (GradientCollector collector = Engine.getEngine("PyTorch").newGradientCollector()) {
                NDArray loss = model.forward(ps, ids, null, null, true).mul(direction).mean();
                collector.backward(loss);
            }
            for (Parameter parameter : StateDict.parameters(model).values()) {
                NDArray array = parameter.getArray();
                if (parameter.requiresGradient()) {
                    NDArray gradient = array.getGradient();
                    array.subi(gradient.mul(10f));
                    gradient.subi(gradient);
                } else {
                    assertFalse(array.hasGradient(), "frozen parameters get no gradient");
                }
            }
        }
    }
}
