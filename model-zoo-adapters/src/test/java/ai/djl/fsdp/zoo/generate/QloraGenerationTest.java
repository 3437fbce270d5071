package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

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
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code generate} on a 4-bit base (a float checkpoint with {@code --use_4bit_quantization True},
 * or a pre-quantized checkpoint), alone and under LoRA adapters on their base, in one process and
 * sharded over two ranks, chooses the tokens a float base holding the dequantized weights chooses
 * (decoded independently by {@link QuantizedWeight}).
 */
class QloraGenerationTest {

    private static final QuantizationConfig NF4 =
            QuantizationConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
    private static final String[] FLAGS = {
        "--use_4bit_quantization", "True", "--use_nested_quant", "True"
    };

    @TempDir Path dir;

    @Test
    void generatesOnA4BitBaseAsOnItsDequantizedWeights() throws Exception {
        Path floats = TestModels.byteLevelLlama(dir.resolve("float"), 11);
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
        List<Long> ids = new ArrayList<>();
        String line = GenerateRuns.tokenIds(output);
        for (String id : line.replaceAll("token ids: |[\\[\\] ]", "").split(",")) {
            ids.add(Long.parseLong(id));
        }
        return ids;
    }

    /** Runs {@code generate} greedily in this process; returns its error stream. */
    private static String generate(Path model, String... flags) {
        return GenerateRuns.run(model, "abc", 12, flags)[1];
    }

    /** Runs {@code generate} greedily on two ranks; returns what rank 0 printed. */
    private static String generateOnTwoRanks(Path model, String... flags) {
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerateMain.class)
                        .worldSize(2)
                        .args(GenerateRuns.arguments(model, "abc", 12, flags))
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }
}
