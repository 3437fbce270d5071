package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.lora.PrequantizedCheckpoints;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code generate} on a 4-bit base (a float checkpoint with {@code --use_4bit_quantization True},
 * or a pre-quantized checkpoint), alone and under LoRA adapters on their base, in one process and
 * sharded over two ranks, chooses the tokens a float base holding the dequantized weights chooses
 * (decoded independently by {@link QuantizedWeight}).
 */
class QloraGenerationTest {

    private static final Pattern TOKENS = Pattern.compile("token ids: (\\[[^\\]]*\\])");
    private static final QuantizationConfig NF4 =
            QuantizationConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
    private static final String[] FLAGS = {
        "--use_4bit_quantization", "True", "--use_nested_quant", "True"
    };

    @TempDir Path dir;

    @Test
    void generatesOnA4BitBaseAsOnItsDequantizedWeights() throws Exception {
        Path floats = dir.resolve("float");
        JsonObject json = Models.builtin("llama-tiny").toJson();
        json.addProperty("vocab_size", ByteLevelTokenizer.VOCAB_SIZE);
        json.addProperty("bos_token_id", ByteLevelTokenizer.VOCAB_SIZE - 1);
        json.addProperty("eos_token_id", ByteLevelTokenizer.VOCAB_SIZE - 1);
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(11);
            HfCheckpoint.save(Models.create(ModelFamilies.parse(json), manager), floats);
        }
        ByteLevelTokenizer.write(floats.resolve(Tokenizers.FILE));
        Path packed = PrequantizedCheckpoints.write(floats, NF4, dir.resolve("packed"));
        ByteLevelTokenizer.write(packed.resolve(Tokenizers.FILE));
        Path dequantized = dequantized(floats, dir.resolve("dequantized"));
        Path onFloats = adapters(dequantized, floats, "on-float");
        Path onPacked = adapters(dequantized, packed, "on-packed");
        Path onDequantized = adapters(dequantized, dequantized, "on-dequantized");

        List<Long> expected = tokens(generate(dequantized));
        assertNotEquals(expected, tokens(generate(floats)), "the float base continues otherwise");
        assertEquals(expected, tokens(generate(floats, FLAGS)), "quantized as it loads");
        assertEquals(expected, tokens(generate(packed)), "pre-quantized");
        List<Long> adapted = tokens(generate(onDequantized));
        assertNotEquals(expected, adapted, "the adapters change the continuation");
        assertEquals(adapted, tokens(generate(onFloats, FLAGS)), "adapters, base quantized");
        assertEquals(adapted, tokens(generate(onPacked)), "adapters on a pre-quantized base");
        // Sharded over two ranks: the packed base's shards gathered and decoded unit by unit.
        assertEquals(adapted, tokens(generateOnTwoRanks(onPacked)));
        assertEquals(adapted, tokens(generateOnTwoRanks(onFloats, FLAGS)));
        System.out.println(
                "4-bit and dequantized bases generate " + expected + ", adapted " + adapted);
    }

    /** The float checkpoint with every quantized projection's weight quantized and decoded. */
    private static Path dequantized(Path floats, Path directory) throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = Models.load(floats, manager);
            CausalLM paths = Models.load(floats, manager);
            for (String path : NF4.apply(paths)) {
                Parameter weight = StateDict.parameters(lm).get(path + ".weight");
                NDArray values = weight.getArray();
                float[] decoded =
                        QuantizedWeight.quantize(
                                        values.toFloatArray(),
                                        values.getShape().getShape(),
                                        NF4.getQuant())
                                .dequantize();
                values.set(decoded);
            }
            HfCheckpoint.save(lm, directory);
        }
        ByteLevelTokenizer.write(directory.resolve(Tokenizers.FILE));
        return directory;
    }

    /** The same rank-4 adapters (B drawn non-zero) saved with {@code base} as their base. */
    private Path adapters(Path shape, Path base, String name) throws IOException {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = Models.load(shape, manager);
            Engine.getEngine("PyTorch").setRandomSeed(3);
            LoraConfig lora = ModelLocationTest.adapt(model, base, manager);
            Path directory = dir.resolve(name);
            Lora.save(model, lora, directory);
            return directory;
        }
    }

    private static List<Long> tokens(String output) {
        Matcher matcher = TOKENS.matcher(output);
        assertTrue(matcher.find(), output);
        List<Long> ids = new ArrayList<>();
        for (String id : matcher.group(1).replaceAll("[\\[\\] ]", "").split(",")) {
            ids.add(Long.parseLong(id));
        }
        return ids;
    }

    /** Runs {@code generate} greedily in this process; returns its error stream. */
    private static String generate(Path model, String... flags) {
        StringWriter err = new StringWriter();
        CommandLine command =
                new CommandLine(new GenerateCommand())
                        .setOut(new PrintWriter(new StringWriter()))
                        .setErr(new PrintWriter(err));
        assertEquals(0, command.execute(arguments(model, flags)), err.toString());
        return err.toString();
    }

    /** Runs {@code generate} greedily on two ranks; returns what rank 0 printed. */
    private static String generateOnTwoRanks(Path model, String... flags) {
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerateMain.class)
                        .worldSize(2)
                        .args(arguments(model, flags))
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    private static String[] arguments(Path model, String... flags) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model",
                                model.toString(),
                                "--prompt",
                                "abc",
                                "--max_new_tokens",
                                "12",
                                "--print_token_ids"));
        args.addAll(List.of(flags));
        return args.toArray(new String[0]);
    }
}
