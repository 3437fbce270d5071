package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code generate --model} on a LoRA output: the merged model, or the adapters on their base. */
class ModelLocationTest {

    @TempDir Path dir;

    @Test
    void generatesFromAdaptersOnTheirBaseAndFromTheMergedModel() throws Exception {
        Path base = Files.createDirectories(dir.resolve("base"));
        Path adapters = dir.resolve("lora-output");
        try (NDManager manager = TestModels.newManager()) {
            JsonObject json = Models.builtin("gpt2-tiny").toJson();
            json.addProperty("vocab_size", ByteLevelTokenizer.VOCAB_SIZE);
            Engine.getEngine("PyTorch").setRandomSeed(7);
            CausalLM model = Models.create(ModelFamilies.parse(json), manager);
            HfCheckpoint.save(model, base);
            ByteLevelTokenizer.write(base.resolve(Tokenizers.FILE));
            LoraConfig lora = adapt(model, base, manager);
            Lora.save(model, lora, adapters);
            JsonObject written =
                    JsonParser.parseString(Files.readString(adapters.resolve(Lora.CONFIG_FILE)))
                            .getAsJsonObject();
            assertEquals(base.toString(), written.get("base_model_name_or_path").getAsString());
            assertEquals(
                    "[\"c_attn\",\"c_fc\",\"c_proj\"]",
                    written.get("target_modules").toString(),
                    "all-linear resolved to the module names, as PEFT writes them");
            Lora.merge(model);
            HfCheckpoint.save(model, dir.resolve("merged"));
            ByteLevelTokenizer.write(dir.resolve("merged").resolve(Tokenizers.FILE));
        }

        String[] onBase = generate(adapters);
        assertTrue(onBase[1].contains("on their base " + base), onBase[1]);
        String[] merged = generate(dir.resolve("merged"));
        assertEquals(merged[0], onBase[0], "adapters on the base generate as the merged model");
        assertNotEquals(generate(base)[0], onBase[0], "the adapters change the continuation");
        // Sharded over two ranks: the base frozen in its dtype, each rank reading its shards of
        // the adapters too, prints token for token what one process prints.
        String sharded = generateOnTwoRanks(adapters);
        assertTrue(sharded.contains(onBase[0]), sharded);
        assertTrue(sharded.contains("on their base " + base), sharded);
        String shardedMerged = generateOnTwoRanks(dir.resolve("merged"));
        assertTrue(shardedMerged.contains(onBase[0]), shardedMerged);

        Files.move(dir.resolve("merged"), adapters.resolve(SaveFormat.MERGED));
        String[] finetuneLayout = generate(adapters);
        assertEquals(merged[0], finetuneLayout[0]);
        assertTrue(finetuneLayout[1].contains("merged model"), finetuneLayout[1]);
    }

    /**
     * Puts rank-4 adapters on every linear projection of a model, their B drawn non-zero so that
     * they change what it generates, naming {@code base} as their base.
     */
    static LoraConfig adapt(CausalLM model, Path base, NDManager manager) {
        LoraConfig lora =
                LoraConfig.builder()
                        .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                        .optRank(4)
                        .optBaseModelNameOrPath(base.toString())
                        .build();
        Lora.apply(model, lora);
        for (LoraLinear adapter : Lora.adapters(model).values()) {
            NDArray b = adapter.getLoraB().getArray();
            b.set(manager.randomNormal(0, 0.5f, b.getShape(), b.getDataType()).toFloatArray());
        }
        return lora;
    }

    @Test
    void saysWhatToPassWhenTheBaseCannotBeFound() throws IOException {
        Files.writeString(
                dir.resolve(Lora.CONFIG_FILE),
                "{\"peft_type\": \"LORA\", \"r\": 8, \"lora_alpha\": 16, \"target_modules\":"
                        + " [\"c_attn\"], \"base_model_name_or_path\": \"gpt2-tiny\"}");
        IllegalArgumentException noBase =
                assertThrows(IllegalArgumentException.class, () -> ModelLocation.of(dir));
        assertTrue(
                noBase.getMessage().contains("pass the merged model's directory"),
                noBase.getMessage());
        Path fresh = Files.createDirectory(dir.resolve("fresh"));
        ConfigJson.write(Models.builtin("gpt2-tiny"), fresh);
        Files.writeString(
                dir.resolve(Lora.CONFIG_FILE),
                "{\"peft_type\": \"LORA\", \"r\": 8, \"lora_alpha\": 16, \"target_modules\":"
                        + " [\"c_attn\"], \"base_model_name_or_path\": \""
                        + fresh
                        + "\"}");
        IllegalArgumentException freshBase =
                assertThrows(IllegalArgumentException.class, () -> ModelLocation.of(dir));
        assertTrue(freshBase.getMessage().contains("never saved"), freshBase.getMessage());
        IllegalArgumentException empty =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ModelLocation.of(Files.createDirectory(dir.resolve("empty"))));
        assertTrue(empty.getMessage().contains("holds neither config.json"), empty.getMessage());
    }

    /** Runs {@code generate} greedily on two ranks; returns what rank 0 printed. */
    private static String generateOnTwoRanks(Path model) {
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerateMain.class)
                        .worldSize(2)
                        .args(arguments(model))
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    /** Runs {@code generate} greedily; returns its output and its error stream. */
    private static String[] generate(Path model) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine command =
                new CommandLine(new GenerateCommand())
                        .setOut(new PrintWriter(out))
                        .setErr(new PrintWriter(err));
        int exit = command.execute(arguments(model));
        assertEquals(0, exit, err.toString());
        return new String[] {out.toString(), err.toString()};
    }

    private static String[] arguments(Path model) {
        return new String[] {
            "--model", model.toString(), "--prompt", "abc", "--max_new_tokens", "8"
        };
    }
}
