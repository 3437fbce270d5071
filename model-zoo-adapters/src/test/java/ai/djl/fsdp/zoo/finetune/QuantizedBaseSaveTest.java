package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.qlora.PrequantizedSource;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.TensorInfo;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.generate.GenerateRuns;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.lora.PrequantizedCheckpoints;
import ai.djl.fsdp.zoo.lora.QloraStartChecks;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.ndarray.NDManager;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code finetune --use_4bit_quantization True --save_base_model True} saves the frozen 4-bit base
 * in {@code base/} pre-quantized, and what it saves is the base the run trained on:
 *
 * <ul>
 *   <li>its files hold, tensor by tensor (name, type, shape, bytes; the quant states' JSON by
 *       value), what {@link PrequantizedCheckpoints} (an independent writer of transformers'
 *       layout, over the whole model quantized at once) writes for the same float checkpoint;
 *   <li>started sharded from {@code base/} (the pre-quantized loader, {@link PrequantizedSource}),
 *       the model holds bit for bit what quantizing the float checkpoint whole gives: the packed
 *       bytes, the scales and the nested state, which is what the run held (a sharded start equals
 *       the whole model's quantization, {@code QloraTest}, and a frozen base never changes);
 *   <li>NF4 and FP4, plain and nested, on one rank and on two; under {@code --bf16} the scales the
 *       run held in bfloat16, widened exactly;
 *   <li>{@code generate} with the adapters on {@code base/} chooses the same tokens, and prints the
 *       same text, as {@code generate} with the same adapters on the float checkpoint quantized as
 *       it loads: the run's own model, the same bytes through the same decoding and the same
 *       kernels, so the two agree exactly. (The merged model is not that check: it computes {@code
 *       x (W + B A)} where the adapters compute {@code x W + (x A) B}, equal only within float
 *       rounding.)
 * </ul>
 */
class QuantizedBaseSaveTest {

    private static final String PROMPT = "line 3: a";

    @TempDir static Path dir;
    private static Path floats;
    private static Path text;

    /**
     * llama-tiny with the byte-level vocabulary, its fresh weights saved as a float checkpoint, and
     * the text it trains on.
     */
    @BeforeAll
    static void writeFloatCheckpoint() throws IOException {
        floats = TestModels.byteLevelLlama(dir.resolve("float"), 17);
        // Plain text: no chat markers, so the vocabulary does not grow and the base stays frozen.
        text = TestModels.smallText(dir, 24);
    }

    @Test
    void savesEach4BitFormPreQuantizedOnOneRank() throws IOException {
        for (QuantType type : QuantType.values()) {
            for (boolean nested : new boolean[] {false, true}) {
                QuantizationConfig config = config(type, nested);
                String name = type.getName() + (nested ? "-nested" : "");
                List<String> args = new ArrayList<>(arguments(config, dir.resolve(name)));
                if (type == QuantType.FP4 && nested) {
                    // Sharded files with their index, as --max_shard_size splits merged/.
                    args.addAll(List.of("--max_shard_size", "60KB"));
                }
                String run = FinetuneCommandTest.succeeds(args);
                Path base = dir.resolve(name).resolve(SaveFormat.BASE);
                assertEquals(
                        type == QuantType.FP4 && nested,
                        Files.exists(base.resolve(SafetensorsCheckpoint.INDEX_FILE)),
                        run);
                assertSameFiles(config, base, false);
                assertLoadsAsQuantizedWhole(config, base, false);
            }
        }
    }

    @Test
    void underBf16SavesTheScalesAsTheRunHeldThem() throws IOException {
        QuantizationConfig config = config(QuantType.NF4, true);
        List<String> args = new ArrayList<>(arguments(config, dir.resolve("bf16")));
        args.addAll(List.of("--bf16", "True"));
        FinetuneCommandTest.succeeds(args);
        Path base = dir.resolve("bf16").resolve(SaveFormat.BASE);
        assertSameFiles(config, base, true);
        assertLoadsAsQuantizedWhole(config, base, true);
    }

    @Test
    void savesOnTwoRanksAndGeneratesWithTheAdaptersOnTheSavedBase() throws IOException {
        QuantizationConfig config = config(QuantType.FP4, true);
        Path output = dir.resolve("two-ranks");
        // Without merged/, as a model too large to keep a merged copy of is saved.
        List<String> args = new ArrayList<>(arguments(config, output));
        args.addAll(List.of("--save_merged_model", "False"));
        FinetuneCommandTest.launch(args);
        assertFalse(Files.exists(output.resolve(SaveFormat.MERGED)), "no merged/");
        assertTrue(Files.exists(output.resolve(Tokenizers.FILE)), "the tokenizer");
        Path base = output.resolve(SaveFormat.BASE);
        assertSameFiles(config, base, false);
        assertLoadsAsQuantizedWhole(config, base, false);

        JsonObject adapterConfig =
                JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                        .getAsJsonObject();
        assertEquals(
                base.toAbsolutePath().toString(),
                adapterConfig.get("base_model_name_or_path").getAsString());
        // The output directory (its adapters on base/), and the adapters on the float checkpoint
        // quantized as it loads: the run's own model.
        String[] savedBase = GenerateRuns.run(output, PROMPT, 12);
        assertTrue(savedBase[1].contains("on their base " + base), savedBase[1]);
        String[] asTrained =
                GenerateRuns.run(
                        adapters(output, "on-float", floats),
                        PROMPT,
                        12,
                        "--use_4bit_quantization",
                        "True",
                        "--bnb_4bit_quant_type",
                        "fp4",
                        "--use_nested_quant",
                        "True");
        assertEquals(
                GenerateRuns.tokenIds(asTrained[1]),
                GenerateRuns.tokenIds(savedBase[1]),
                savedBase[1]);
        assertEquals(asTrained[0], savedBase[0], "the same text");
        String alone = GenerateRuns.tokenIds(GenerateRuns.run(base, PROMPT, 12)[1]);
        assertNotEquals(alone, GenerateRuns.tokenIds(savedBase[1]), "the adapters change it");
        System.out.println(
                "adapters on the saved 4-bit base and on the float checkpoint quantized as it"
                        + " loads: "
                        + GenerateRuns.tokenIds(savedBase[1])
                        + "; base/ alone: "
                        + alone);
    }

    /** A copy of a run's adapters that names {@code base} as their base. */
    private static Path adapters(Path output, String name, Path base) throws IOException {
        Path copy = Files.createDirectories(dir.resolve(name));
        Files.copy(output.resolve(Lora.WEIGHTS_FILE), copy.resolve(Lora.WEIGHTS_FILE));
        JsonObject config =
                JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                        .getAsJsonObject();
        config.addProperty("base_model_name_or_path", base.toString());
        Files.writeString(copy.resolve(Lora.CONFIG_FILE), config.toString());
        return copy;
    }

    private static QuantizationConfig config(QuantType type, boolean nested) {
        return QuantizationConfig.builder()
                .setQuantType(type)
                .optNested(nested)
                .optStorageType(nested ? "bfloat16" : "uint8")
                .build();
    }

    /** A two-step QLoRA run on the float checkpoint that saves its base. */
    private static List<String> arguments(QuantizationConfig config, Path output) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model_name_or_path", floats.toString(),
                                "--dataset_name", text.toString(),
                                "--use_peft_lora", "True",
                                "--lora_dropout", "0",
                                "--max_seq_len", "64",
                                "--max_steps", "2",
                                "--learning_rate", "1e-2",
                                "--save_strategy", "no",
                                "--eval_strategy", "no",
                                "--exact_match_samples", "0",
                                "--use_4bit_quantization", "True",
                                "--bnb_4bit_quant_type", config.getQuant().getQuantType().getName(),
                                "--use_nested_quant", String.valueOf(config.getQuant().isNested()),
                                "--bnb_4bit_quant_storage_dtype", config.getStorageType(),
                                "--save_base_model", "True",
                                "--output_dir", output.toString()));
        return args;
    }

    /**
     * The saved base against the independent writer's pre-quantized checkpoint of the float one:
     * the same tensors, types and shapes, quant states and bytes (under bfloat16 those of the
     * codes: the floats were held rounded, which the load checks).
     */
    private static void assertSameFiles(QuantizationConfig config, Path base, boolean bf16)
            throws IOException {
        assertEquals(
                JsonParser.parseString(expectedBlock(config, bf16)),
                ConfigJson.readObject(base).get(QuantizationConfig.KEY));
        assertEquals(
                "float32", ConfigJson.readObject(base).get("torch_dtype").getAsString(), "auto");
        Path expected = dir.resolve("expected-" + config.describe().replaceAll("\\W+", "-"));
        if (!Files.exists(expected)) {
            PrequantizedCheckpoints.write(floats, config, expected);
        }
        String type = config.getQuant().getQuantType().getName();
        try (SafetensorsCheckpoint want = SafetensorsCheckpoint.open(expected);
                SafetensorsCheckpoint got = SafetensorsCheckpoint.open(base)) {
            assertEquals(want.names(), got.names());
            for (String name : want.names()) {
                TensorInfo info = want.info(name);
                assertEquals(info.dtype(), got.info(name).dtype(), name);
                if (name.contains(PrequantizedSource.QUANT_STATE)) {
                    assertSameState(want, got, name, bf16); // JSON: its length is its format's
                    continue;
                }
                assertEquals(info.shape(), got.info(name).shape(), name);
                String state = name + PrequantizedSource.QUANT_STATE + type;
                if (!bf16 || info.dtype() == Dtype.U8 || want.contains(state)) {
                    long size = info.dtype().bytes();
                    assertEquals(
                            want.map(name, 0, info.elements()),
                            got.map(name, 0, info.elements()),
                            name + ", " + info.elements() * size + " bytes");
                }
            }
        }
    }

    /**
     * The {@code quantization_config} transformers writes for the run's {@code BitsAndBytesConfig},
     * written out by hand: the run's code, nesting and storage type, the type its 4-bit layers
     * computed in, and transformers' defaults for the 8-bit keys.
     */
    private static String expectedBlock(QuantizationConfig config, boolean bf16) {
        return String.format(
                Locale.ROOT,
                """
                {"quant_method": "bitsandbytes", "load_in_4bit": true, "load_in_8bit": false,
                 "bnb_4bit_quant_type": "%s", "bnb_4bit_use_double_quant": %b,
                 "bnb_4bit_compute_dtype": "%s", "bnb_4bit_quant_storage": "%s",
                 "llm_int8_threshold": 6.0, "llm_int8_has_fp16_weight": false,
                 "llm_int8_enable_fp32_cpu_offload": false}\
                """,
                config.getQuant().getQuantType() == QuantType.NF4 ? "nf4" : "fp4",
                config.getQuant().isNested(),
                bf16 ? "bfloat16" : "float32",
                config.getStorageType());
    }

    /**
     * A quant state's JSON by value: the nested offset as the float32 it reads as (rounded to
     * bfloat16 where the run held it so).
     */
    private static void assertSameState(
            SafetensorsCheckpoint want, SafetensorsCheckpoint got, String name, boolean bf16)
            throws IOException {
        JsonObject expected = json(want, name);
        JsonObject actual = json(got, name);
        if (expected.has("nested_offset")) {
            float[] offset = {expected.remove("nested_offset").getAsFloat()};
            assertEquals(
                    (bf16 ? toBfloat16(offset) : offset)[0],
                    actual.remove("nested_offset").getAsFloat(),
                    name);
        }
        assertEquals(expected, actual, name);
    }

    private static JsonObject json(SafetensorsCheckpoint checkpoint, String name)
            throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            byte[] bytes = checkpoint.read(manager, name).toByteArray();
            return JsonParser.parseString(new String(bytes, StandardCharsets.UTF_8))
                    .getAsJsonObject();
        }
    }

    /**
     * Started sharded from the saved base, the model holds what quantizing the float checkpoint
     * whole gives, bit for bit; under bfloat16 its floats rounded to bfloat16 as the run held them
     * (but the code map, which a loader takes from the code).
     */
    private static void assertLoadsAsQuantizedWhole(
            QuantizationConfig config, Path base, boolean bf16) throws IOException {
        Map<String, float[]> expected;
        try (NDManager manager = TestModels.newManager()) {
            CausalLM whole = Models.load(floats, manager);
            Qlora.quantize(whole, config.getQuant(), Qlora.DEFAULT_SKIP);
            expected = QloraStartChecks.base(whole);
        }
        Map<String, float[]> loaded;
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.single(""))) {
            loaded = QloraStartChecks.started(group, base, null);
        }
        assertEquals(expected.keySet(), loaded.keySet());
        int tensors = 0;
        for (Map.Entry<String, float[]> entry : expected.entrySet()) {
            float[] want = entry.getValue();
            if (bf16 && !entry.getKey().endsWith("weight.quant_map")) {
                want = toBfloat16(want);
            }
            assertTrue(Arrays.equals(want, loaded.get(entry.getKey())), entry.getKey());
            tensors++;
        }
        System.out.printf(
                "%s%s: base/ loads back as the whole model quantized, %d tensors bit for bit%n",
                config.describe(), bf16 ? ", --bf16" : "", tensors);
    }

    /** Each value rounded to bfloat16 (to nearest, ties to even) and widened back. */
    private static float[] toBfloat16(float[] values) {
        float[] rounded = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            int bits = Float.floatToRawIntBits(values[i]);
            int even = (bits >>> 16) & 1;
            rounded[i] = Float.intBitsToFloat((bits + 0x7FFF + even) & 0xFFFF0000);
        }
        return rounded;
    }
}
