package ai.djl.fsdp.zoo.models;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.TestModels;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each new family fine-tunes as a user would run it: {@code bin/fsdp finetune} with LoRA on 2 ranks
 * (real JVMs on loopback) from a {@code config.json} of the family's released shape at small widths
 * (fresh weights, the project's byte-level tokenizer), saves adapters and the merged model under
 * the family's names, then {@code generate} on 2 ranks continues a prompt from the output.
 */
class FamilyFinetuneTest {

    private static final String COMMON =
            "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 2,"
                    + " \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                    + " \"vocab_size\": 257, \"max_position_embeddings\": 256,"
                    + " \"rms_norm_eps\": 1e-06, \"hidden_act\": \"silu\", \"bos_token_id\": 256,"
                    + " \"eos_token_id\": 256, ";

    private static String config(String family) {
        return switch (family) {
            case "llama" ->
                    "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], "
                            + COMMON
                            + "\"rope_theta\": 500000.0, \"tie_word_embeddings\": true,"
                            + " \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0,"
                            + " \"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 16,"
                            + " \"rope_type\": \"llama3\"}}";
            case "mistral" ->
                    "{\"model_type\": \"mistral\", \"architectures\": [\"MistralForCausalLM\"], "
                            + COMMON
                            + "\"rope_theta\": 10000.0, \"sliding_window\": 8,"
                            + " \"tie_word_embeddings\": false}";
            case "qwen2" ->
                    "{\"model_type\": \"qwen2\", \"architectures\": [\"Qwen2ForCausalLM\"], "
                            + COMMON
                            + "\"rope_theta\": 1000000.0, \"tie_word_embeddings\": true,"
                            + " \"use_sliding_window\": false, \"sliding_window\": 32768,"
                            + " \"max_window_layers\": 2}";
            case "qwen3" ->
                    "{\"model_type\": \"qwen3\", \"architectures\": [\"Qwen3ForCausalLM\"], "
                            + COMMON
                            + "\"head_dim\": 32, \"attention_bias\": false,"
                            + " \"rope_theta\": 1000000, \"rope_scaling\": null,"
                            + " \"tie_word_embeddings\": true, \"use_sliding_window\": false,"
                            + " \"sliding_window\": null, \"max_window_layers\": 2}";
            default -> throw new IllegalArgumentException(family);
        };
    }

    /** The settings each family runs with besides LoRA. */
    private static List<String> settings(String family) {
        return switch (family) {
            case "llama" -> List.of("--sharding_strategy", "SHARD_GRAD_OP");
            case "qwen2" -> List.of("--sharding_strategy", "NO_SHARD");
            // The default units of an untied model: the decoder layers, the embedding and the
            // head each alone, as the 8B-shaped run needs (docs/scale.md).
            case "mistral" -> List.of("--bf16", "True");
            default ->
                    List.of(
                            "--bf16",
                            "True",
                            "--fsdp_transformer_layer_cls_to_wrap",
                            ModelFamilies.of(family).decoderLayer().getSimpleName());
        };
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama", "mistral", "qwen2", "qwen3"})
    void loraFinetunesSavesAndGeneratesOnTwoRanks(String family, @TempDir Path dir)
            throws IOException {
        Path base = Files.createDirectories(dir.resolve("base"));
        Files.writeString(base.resolve("config.json"), config(family));
        Path data = TestModels.smallText(dir, 16);
        Path output = dir.resolve("out");
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "finetune",
                                "--model_name_or_path",
                                base.toString(),
                                "--tokenizer_name",
                                "byte-level",
                                "--use_peft_lora",
                                "True",
                                "--output_dir",
                                output.toString(),
                                "--dataset_name",
                                data.toString(),
                                "--max_seq_len",
                                "24",
                                "--max_steps",
                                "2",
                                "--save_steps",
                                "1",
                                "--per_device_train_batch_size",
                                "4",
                                "--eval_strategy",
                                "no",
                                "--exact_match_samples",
                                "0"));
        args.addAll(settings(family));
        String log = run(args.toArray(new String[0]));
        Path checkpoint = output.resolve("checkpoint-1");
        args.set(args.indexOf(output.toString()), dir.resolve("resumed").toString());
        args.addAll(List.of("--resume_from_checkpoint", checkpoint.toString()));
        String resumed = run(args.toArray(new String[0]));
        assertTrue(resumed.contains("resumed from " + checkpoint), resumed);
        assertEquals(stepTwo(log), stepTwo(resumed), family + " resumed\n" + log + resumed);
        JsonObject adapters = json(output.resolve("adapter_config.json"));
        String targets = adapters.get("target_modules").toString();
        for (String module : new String[] {"q_proj", "o_proj", "gate_proj", "down_proj"}) {
            assertTrue(targets.contains(module), family + " adapters " + targets + "\n" + log);
        }
        JsonObject merged = json(output.resolve("merged").resolve("config.json"));
        assertEquals(family, merged.get("model_type").getAsString());
        assertEquals(
                ModelFamilies.of(family).architecture(),
                merged.getAsJsonArray("architectures").get(0).getAsString());
        String generated =
                run(
                        "generate",
                        "--model",
                        output.toString(),
                        "--prompt",
                        "line 3:",
                        "--max_new_tokens",
                        "4",
                        "--print_token_ids");
        assertTrue(generated.contains("token ids: ["), generated);
    }

    /** The loss the job logged at step 2. */
    private static String stepTwo(String log) {
        Matcher step = Pattern.compile("step=2 epoch=\\S+ loss=([0-9.]+)").matcher(log);
        assertTrue(step.find(), log);
        return step.group(1);
    }

    private static String run(String... args) {
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(args)
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    private static JsonObject json(Path file) throws IOException {
        return JsonParser.parseString(Files.readString(file)).getAsJsonObject();
    }
}
