package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code finetune} of the built-in {@code t5-tiny} on {@code sentiment-labels} with the settings
 * the recipe's other families take from the command line: under {@code --bf16 True} the loss falls
 * (full fine-tune, 8 steps) from a first loss near float32's but not equal to it; LoRA on {@code
 * all-linear} and on the named modules {@code q,k,v,o,wi,wo} adapts the same modules, saved under
 * PEFT's names ({@code base_model.model.decoder.block.1.layer.1.EncDecAttention.q.lora_A.weight},
 * ...): every projection of every attention, self and cross, and of every feed-forward block, never
 * {@code lm_head}; {@code adapter_config.json} names them as PEFT resolves {@code all-linear}.
 */
class Seq2SeqSettingsTest {

    /** t5-tiny's modules: 2 encoder blocks, 2 decoder blocks, relu feed-forward. */
    private static final Set<String> ADAPTED = adaptedModules();

    private static Set<String> adaptedModules() {
        Set<String> modules = new TreeSet<>();
        for (String stack : List.of("encoder", "decoder")) {
            boolean decoder = stack.equals("decoder");
            for (int block = 0; block < 2; block++) {
                String prefix = stack + ".block." + block + ".layer.";
                for (String projection : List.of("q", "k", "v", "o")) {
                    modules.add(prefix + "0.SelfAttention." + projection);
                    if (decoder) {
                        modules.add(prefix + "1.EncDecAttention." + projection);
                    }
                }
                for (String projection : List.of("wi", "wo")) {
                    modules.add(prefix + (decoder ? 2 : 1) + ".DenseReluDense." + projection);
                }
            }
        }
        return modules;
    }

    private static String finetune(Path output, int steps, String... extra) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model_name_or_path", "t5-tiny",
                                "--dataset_name", "sentiment-labels",
                                "--max_target_length", "4",
                                "--per_device_train_batch_size", "8",
                                "--max_steps", Integer.toString(steps),
                                "--logging_steps", "1",
                                "--learning_rate", "1e-2",
                                "--exact_match_samples", "0",
                                "--output_dir", output.toString()));
        args.addAll(List.of(extra));
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        assertEquals(0, line.execute(args.toArray(new String[0])), out.toString());
        return out.toString();
    }

    private static List<Double> losses(Path output) throws Exception {
        List<Double> losses = new ArrayList<>();
        for (String row : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            JsonObject metrics = JsonParser.parseString(row).getAsJsonObject();
            if (metrics.has("loss")) {
                losses.add(metrics.get("loss").getAsDouble());
            }
        }
        return losses;
    }

    @Test
    void bf16TrainingLowersTheLoss(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("bf16");
        finetune(output, 8, "--bf16", "True");
        List<Double> losses = losses(output);
        assertEquals(8, losses.size(), losses.toString());
        losses.forEach(loss -> assertTrue(Double.isFinite(loss), losses.toString()));
        double first = losses.get(0);
        double last = losses.get(losses.size() - 1);
        assertTrue(last < 0.7 * first, "bf16 losses " + losses);
        // The same run in float32: the first loss near bfloat16's, but not equal (bf16 was on).
        Path float32 = directory.resolve("fp32");
        finetune(float32, 1);
        double reference = losses(float32).get(0);
        double relative = Math.abs(first - reference) / reference;
        assertTrue(relative > 0 && relative < 1e-2, first + " against float32's " + reference);
        System.out.printf(
                Locale.ROOT,
                "bf16 t5-tiny losses: %s; first against float32's %.6f: %.1e relative%n",
                losses,
                reference,
                relative);
    }

    @Test
    void allLinearAndNamedModulesAdaptTheSameModules(@TempDir Path directory) throws Exception {
        for (String targets : List.of("all-linear", "q,k,v,o,wi,wo")) {
            Path output = directory.resolve(targets.replace(',', '_'));
            finetune(
                    output,
                    8,
                    "--use_peft_lora",
                    "True",
                    "--lora_r",
                    "4",
                    "--lora_target_modules",
                    targets);
            Set<String> saved = new TreeSet<>();
            try (SafetensorsFile file = SafetensorsFile.open(output.resolve(Lora.WEIGHTS_FILE))) {
                for (String name : file.getNames()) {
                    assertTrue(name.startsWith(Lora.PEFT_PREFIX), name);
                    String module = name.substring(Lora.PEFT_PREFIX.length());
                    assertTrue(
                            module.endsWith(".lora_A.weight") || module.endsWith(".lora_B.weight"),
                            name);
                    saved.add(module.substring(0, module.length() - ".lora_A.weight".length()));
                }
                assertEquals(2 * ADAPTED.size(), file.getNames().size(), targets);
            }
            assertEquals(ADAPTED, saved, targets);
            JsonObject config =
                    JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                            .getAsJsonObject();
            // all-linear as the names it resolved to (sorted), named targets as given.
            assertEquals(
                    targets.equals("all-linear")
                            ? "[\"k\",\"o\",\"q\",\"v\",\"wi\",\"wo\"]"
                            : "[\"q\",\"k\",\"v\",\"o\",\"wi\",\"wo\"]",
                    config.get("target_modules").toString(),
                    targets);
            assertEquals("SEQ_2_SEQ_LM", config.get("task_type").getAsString(), targets);
            List<Double> losses = losses(output);
            assertTrue(losses.get(losses.size() - 1) < losses.get(0), targets + " " + losses);
        }
    }
}
