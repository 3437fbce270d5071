package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.chat.ChatTemplate;
import ai.djl.fsdp.zoo.chat.JinjaChatTemplate;
import ai.djl.fsdp.zoo.chat.TokenizerJson;
import ai.djl.fsdp.zoo.finetune.config.AccelerateDefaultsTest;
import ai.djl.fsdp.zoo.finetune.data.ArithmeticChat;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.finetune.data.Document;
import ai.djl.fsdp.zoo.generate.GenerateCommand;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.ndarray.NDManager;
import com.google.gson.Gson;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bin/fsdp finetune} end to end: the TRL/PEFT recipe's full flag set with an Accelerate
 * config file on two ranks; the default (built-in data and tokenizer) with its metrics, curves and
 * summary; GPT-2's tokenizer on plain text when the shared data is there; bad input named.
 */
class FinetuneCommandTest {

    private static final Pattern STEP = Pattern.compile("step=(\\d+) epoch=\\S+ loss=([0-9.]+)");

    /** Returns the losses of the step lines, in order, checking that every step printed one. */
    static List<Double> losses(String output, int steps) {
        List<Double> losses = new ArrayList<>();
        Matcher matcher = STEP.matcher(output);
        while (matcher.find()) {
            assertEquals(losses.size() + 1, Integer.parseInt(matcher.group(1)), output);
            losses.add(Double.parseDouble(matcher.group(2)));
        }
        assertEquals(steps, losses.size(), output);
        return losses;
    }

    private static void assertLossFell(List<Double> losses) {
        assertTrue(losses.get(losses.size() - 1) < losses.get(0) - 0.1, "the loss fell: " + losses);
    }

    /** Runs {@code finetune} with {@code args} on two ranks and checks that both succeeded. */
    static RankProcesses.Results launch(List<String> args) {
        List<String> command = new ArrayList<>(List.of("finetune"));
        command.addAll(args);
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(command.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(5))
                        .start()) {
            return job.await().assertAllSucceeded();
        }
    }

    /** Writes the built-in data as a directory of split files, as a user's dataset would be. */
    private static Path chatSplits(Path directory) throws Exception {
        Gson gson = new Gson();
        Map<String, List<Document>> splits = ArithmeticChat.generate(48, 6, 5);
        for (Map.Entry<String, List<Document>> split : splits.entrySet()) {
            List<String> lines = new ArrayList<>();
            for (Document document : split.getValue()) {
                lines.add(gson.toJson(Map.of("messages", document.messages())));
            }
            Files.write(directory.resolve(split.getKey() + ".jsonl"), lines);
        }
        return directory;
    }

    private static List<JsonObject> metrics(Path output) throws Exception {
        List<JsonObject> rows = new ArrayList<>();
        for (String line : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            rows.add(JsonParser.parseString(line).getAsJsonObject());
        }
        return rows;
    }

    @Test
    void theRecipesFlagsRunOnTwoRanks(@TempDir Path directory) throws Exception {
        Path data = chatSplits(Files.createDirectory(directory.resolve("data")));
        Path config =
                Files.writeString(
                        directory.resolve("fsdp_config.yaml"), AccelerateDefaultsTest.OLD);
        Path output = directory.resolve("llama-sft-lora-fsdp");
        String recipe =
                "--config_file "
                        + config
                        + " --seed 100 --model_name_or_path llama-tiny --dataset_name "
                        + data
                        + " --chat_template_format chatml --add_special_tokens False"
                        + " --append_concat_token False --splits train,test --max_seq_len 64"
                        + " --num_train_epochs 1 --max_steps 4 --logging_steps 1 --log_level info"
                        + " --logging_strategy steps --evaluation_strategy epoch --save_strategy"
                        + " epoch --push_to_hub --hub_private_repo True --hub_strategy every_save"
                        + " --bf16 True --packing True --learning_rate 1e-3 --lr_scheduler_type"
                        + " cosine --weight_decay 1e-4 --warmup_ratio 0.0 --max_grad_norm 1.0"
                        + " --output_dir "
                        + output
                        + " --per_device_train_batch_size 2 --per_device_eval_batch_size 2"
                        + " --gradient_accumulation_steps 2 --gradient_checkpointing True"
                        + " --use_reentrant False --dataset_text_field content --use_flash_attn"
                        + " True --use_peft_lora True --lora_r 8 --lora_alpha 16 --lora_dropout"
                        + " 0.1 --lora_target_modules all-linear --use_4bit_quantization False"
                        + " --exact_match_samples 5 --exact_match_batch_size 2"
                        + " --save_base_model --fsdp_transformer_layer_cls_to_wrap"
                        + " LlamaDecoderLayer";
        RankProcesses.Results results = launch(Arrays.asList(recipe.split(" ")));
        String out = results.rank(0).output();
        losses(out, 4);
        for (String note : List.of("--push_to_hub", "--use_flash_attn", "config keys")) {
            assertTrue(out.contains("note: " + note), note + " is noted: " + out);
        }
        assertFalse(results.rank(1).output().contains("note:"), "only rank 0 prints");
        // Five questions, 3 and 2 per rank in batches of 2: the ranks take 2 and 1 batches.
        assertTrue(out.matches("(?s).*exact_match before training: \\d/5 = .*"), out);
        try (NDManager manager = TestModels.newManager()) {
            CausalLM merged = Models.load(output.resolve(SaveFormat.MERGED), manager);
            assertEquals(
                    259, merged.getConfig().vocabSize(), "bytes, end of text, the chat markers");
            assertTrue(Lora.adapters(merged).isEmpty());
        }
        assertTrue(Files.isRegularFile(output.resolve(Lora.WEIGHTS_FILE)));
        JsonObject adapterConfig =
                JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                        .getAsJsonObject();
        assertEquals(
                "[\"down_proj\",\"gate_proj\",\"k_proj\",\"o_proj\",\"q_proj\",\"up_proj\",\"v_proj\"]",
                adapterConfig.get("target_modules").toString(),
                "all-linear as the module names it resolved to");
        StringWriter generated = new StringWriter();
        StringWriter notes = new StringWriter();
        int exit =
                new CommandLine(new GenerateCommand())
                        .setOut(new PrintWriter(generated))
                        .setErr(new PrintWriter(notes))
                        .execute(
                                "--model",
                                output.toString(),
                                "--prompt",
                                "What is 1 + 1?",
                                "--print_token_ids");
        assertEquals(0, exit, "generate on the recipe's own output: " + notes);
        assertTrue(notes.toString().contains("merged model"), notes.toString());
        assertChatModel(output.resolve(SaveFormat.MERGED));
        // --save_base_model: the fresh base without its adapters in base/, named as the adapters'
        // base; the adapters alone on it generate what the merged model generates.
        Path base = output.resolve(SaveFormat.BASE);
        assertEquals(
                base.toAbsolutePath().toString(),
                adapterConfig.get("base_model_name_or_path").getAsString());
        Path adaptersAlone = TestModels.adaptersAlone(output, directory);
        StringWriter onBase = new StringWriter();
        StringWriter onBaseNotes = new StringWriter();
        exit =
                new CommandLine(new GenerateCommand())
                        .setOut(new PrintWriter(onBase))
                        .setErr(new PrintWriter(onBaseNotes))
                        .execute(
                                "--model",
                                adaptersAlone.toString(),
                                "--prompt",
                                "What is 1 + 1?",
                                "--print_token_ids");
        assertEquals(0, exit, "generate on the saved base: " + onBaseNotes);
        assertTrue(
                onBaseNotes.toString().contains("on their base " + base), onBaseNotes.toString());
        assertEquals(generated.toString(), onBase.toString());
        String ids = notes.toString().replaceAll("(?s).*(token ids: \\[[^]]*]).*", "$1");
        assertTrue(ids.startsWith("token ids: ["), notes.toString());
        assertTrue(onBaseNotes.toString().contains(ids), onBaseNotes + " vs " + ids);
        List<JsonObject> rows = metrics(output);
        assertTrue(rows.stream().anyMatch(row -> row.has("eval_loss")), rows.toString());
    }

    @Test
    void theDefaultJobWritesMetricsCurvesAndSummary(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("qa");
        List<String> args =
                List.of(
                        "--output_dir", output.toString(),
                        "--max_steps", "6",
                        "--per_device_train_batch_size", "4",
                        "--learning_rate", "3e-3",
                        "--logging_steps", "1",
                        "--eval_strategy", "steps",
                        "--eval_steps", "3",
                        "--exact_match_samples", "8",
                        "--max_grad_norm", "0");
        RankProcesses.Results results = launch(args);
        String out = results.rank(0).output();
        assertLossFell(losses(out, 6));
        assertFalse(out.contains("NaN"), "no value printed as NaN: " + out);
        Matcher plan = Pattern.compile("training gpt2-tiny \\(([0-9,]+) parameters").matcher(out);
        assertTrue(plan.find(), out);
        assertTrue(
                Long.parseLong(plan.group(1).replace(",", "")) > 10_000,
                "the plan counts the sharded model's parameters: " + plan.group());
        assertTrue(out.contains("exact_match after training: "), out);
        List<JsonObject> rows = metrics(output);
        List<JsonObject> steps = rows.stream().filter(row -> row.has("loss")).toList();
        assertEquals(6, steps.size(), rows.toString());
        for (JsonObject row : steps) {
            for (String key : List.of("step", "epoch", "learning_rate", "tokens_per_s")) {
                assertTrue(row.has(key), key + " in " + row);
            }
        }
        List<Integer> evaluated =
                rows.stream()
                        .filter(row -> row.has("eval_loss"))
                        .map(row -> row.get("step").getAsInt())
                        .toList();
        assertEquals(List.of(0, 3, 6), evaluated);
        byte[] png = Files.readAllBytes(output.resolve("training_curves.png"));
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(png, 4), "a PNG");
        JsonObject summary =
                JsonParser.parseString(
                                Files.readString(
                                        output.resolve("summary.json"), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        assertEquals(6, summary.get("steps").getAsInt());
        assertTrue(
                summary.get("final_eval_loss").getAsDouble()
                        < summary.get("first_eval_loss").getAsDouble(),
                summary.toString());
        assertEquals(8, summary.get("exact_match_samples").getAsInt());
        assertEquals(2, summary.getAsJsonArray("peak_rss_bytes_per_rank").size());
        assertTrue(out.contains("summary:"), out);
        assertChatModel(output);
    }

    @Test
    void gpt2TokenizerOnPlainText(@TempDir Path directory) throws Exception {
        Path tokenizer = TestModels.sharedData("gpt2-tokenizer.json"); // skips without it
        Path output = directory.resolve("gpt2");
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        String[] args = {
            "--tokenizer_name", tokenizer.toString(),
            "--dataset_name", TestModels.sharedData("kjv.txt").toString(),
            "--max_seq_len", "32",
            "--max_steps", "4",
            "--logging_steps", "1",
            "--learning_rate", "1e-2",
            "--sharding_strategy", "NO_SHARD",
            "--validation_split_percentage", "1",
            "--output_dir", output.toString()
        };
        assertEquals(0, line.execute(args), out.toString());
        assertLossFell(losses(out.toString(), 4));
        try (NDManager manager = TestModels.newManager()) {
            assertEquals(50257, Models.load(output, manager).getConfig().vocabSize());
        }
    }

    @Test
    void badCommandLinesNameTheProblem(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("never");
        assertEquals(
                2,
                new CommandLine(new FinetuneCommand())
                        .setErr(new PrintWriter(new StringWriter()))
                        .execute("--output_dir", "y", "--no_such_flag"));
        assertFails(
                "--use_4bit_quantization True freezes a 4-bit base: it trains only with"
                        + " --use_peft_lora True",
                "--use_4bit_quantization",
                "True");
        // --save_base_model saves a 4-bit base too (QuantizedBaseSaveTest), never without LoRA.
        assertFalse(
                assertFails(
                                "--save_base_model saves the base under LoRA adapters: it needs"
                                        + " --use_peft_lora True",
                                "--save_base_model",
                                "True")
                        .contains("\n"));
        assertFails(
                "--save_merged_model False leaves out the merged copy of LoRA adapters: it needs"
                        + " --use_peft_lora True",
                "--save_merged_model",
                "False");
        // The adapters alone on a base whose weights are in no file could never be used.
        assertFails(
                "has its weights in no file (a built-in model, or fresh weights from config.json),"
                        + " so they could never be used: add --save_base_model True",
                "--use_peft_lora",
                "True",
                "--save_merged_model",
                "False");
        assertFails("--use_8bit_quantization True: 8-bit", "--use_8bit_quantization", "True");
        assertFails(
                "--bnb_4bit_quant_type int4: use nf4 or fp4",
                "--use_4bit_quantization",
                "--bnb_4bit_quant_type",
                "int4");
        assertFails(
                "--bnb_4bit_compute_dtype int8",
                "--use_4bit_quantization",
                "--bnb_4bit_compute_dtype",
                "int8");
        assertFails(
                "--bnb_4bit_quant_storage_dtype complex64",
                "--use_4bit_quantization",
                "--bnb_4bit_quant_storage_dtype",
                "complex64");
        assertFails("--dataset_name", "--dataset_name", directory.resolve("missing").toString());
        assertFails(
                "neither a checkpoint directory",
                "--model_name_or_path",
                directory.resolve("nope").toString());
        assertFails("--max_seq_len 1024", "--max_seq_len", "1024");
        assertFails(
                "--eval_steps",
                "--eval_strategy",
                "steps",
                "--eval_steps",
                "0",
                "--logging_steps",
                "0");
        assertFails("--exact_match_batch_size must be positive", "--exact_match_batch_size", "0");
        for (String multiple : new String[] {"0", "-8"}) {
            assertFails(
                    "--pad_to_multiple_of must be positive, got " + multiple,
                    "--pad_to_multiple_of",
                    multiple);
        }
        assertFails("--lr_scheduler_type", "--lr_scheduler_type", "polynomial");
        assertFails(
                "--chat_template_kwargs {\"enable_thinking\": fals} is not a JSON object",
                "--chat_template_kwargs",
                "{\"enable_thinking\": fals}");
        assertFails("is not a JSON object (it is not an object)", "--chat_template_kwargs", "[1]");
        assertFails(
                "rendered with ChatML, which takes none",
                "--chat_template_kwargs",
                "{\"enable_thinking\": false}");
        Path typo =
                Files.writeString(
                        directory.resolve("bad.yaml"), "distributed_type: FSDP\nnum_proceses: 2\n");
        assertFails("did you mean num_processes", "--config_file", typo.toString());
        Path tokenizer =
                Files.createDirectories(directory.resolve("tok")).resolve("tokenizer.json");
        ByteLevelTokenizer.write(tokenizer);
        Path config =
                Files.writeString(
                        tokenizer.resolveSibling(ChatTemplate.CONFIG_FILE),
                        "{\"chat_template\": " + new Gson().toJson(ChatTemplate.JINJA) + "}");
        assertFails(
                config + " has a chat_template but no eos_token",
                "--tokenizer_name",
                tokenizer.toString());
        // --chat_template_kwargs reaches the tokenizer's own template.
        Files.writeString(
                config,
                "{\"eos_token\": \"</s>\", \"chat_template\": \"{{ raise_exception('thinking"
                        + " off') if enable_thinking is defined and not enable_thinking else"
                        + " raise_exception('thinking on') }}\"}");
        assertFails(
                "refuses this conversation: thinking on", "--tokenizer_name", tokenizer.toString());
        assertFails(
                "refuses this conversation: thinking off",
                "--tokenizer_name",
                tokenizer.toString(),
                "--chat_template_kwargs",
                "{\"enable_thinking\": false}");
        assertFalse(Files.exists(output), "nothing is written when the run fails");
    }

    @Test
    void badTokenizerAndDataFilesNameTheFileTheFlagAndTheFix(@TempDir Path directory)
            throws Exception {
        Path binary = directory.resolve("model.bin");
        byte[] bytes = new byte[4096];
        new java.util.Random(3).nextBytes(bytes);
        Files.write(binary, bytes);
        assertFails(
                binary + " is not a valid Hugging Face tokenizer.json",
                "--tokenizer_name",
                binary.toString());
        Path whole = directory.resolve("whole.json");
        ByteLevelTokenizer.write(whole);
        byte[] json = Files.readAllBytes(whole);
        Path truncated =
                Files.write(
                        directory.resolve("tokenizer.json"), Arrays.copyOf(json, json.length / 2));
        String message =
                assertFails(
                        truncated + " is not a valid Hugging Face tokenizer.json",
                        "--tokenizer_name",
                        truncated.toString());
        assertTrue(message.contains("pass a complete tokenizer.json with --tokenizer_name"));

        // An added token on an id the vocabulary gives to a byte: two tokens, one embedding row.
        JsonObject colliding = JsonParser.parseString(Files.readString(whole)).getAsJsonObject();
        colliding.getAsJsonArray("added_tokens").add(TokenizerJson.addedToken(65, "<|im_start|>"));
        Path collides = Files.writeString(directory.resolve("collides.json"), colliding.toString());
        assertFails(
                "added token \"<|im_start|>\" has id 65, which the tokenizer also gives to",
                "--tokenizer_name",
                collides.toString());

        Path emptyText = Files.writeString(directory.resolve("empty.txt"), "");
        assertFails(
                emptyText + " holds no text (an empty file?): give at least one example",
                "--dataset_name",
                emptyText.toString());
        Path emptyLines = Files.writeString(directory.resolve("empty.jsonl"), "\n");
        assertFails(
                emptyLines + " holds no JSON lines (an empty file?)",
                "--dataset_name",
                emptyLines.toString());
        Path oneToken = Files.writeString(directory.resolve("tiny.txt"), "ab");
        assertFails(
                "the train split yields no sequence",
                "--dataset_name",
                oneToken.toString(),
                "--validation_split_percentage",
                "50");
    }

    @Test
    void qloraTrainsAdaptersOnA4BitBaseAndResumesExactly(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("qlora");
        String run = qlora(output);
        List<Double> losses = losses(run, 6);
        assertTrue(losses.get(5) < losses.get(0), "the loss fell: " + losses);
        assertTrue(Files.exists(output.resolve(Lora.CONFIG_FILE)), run);
        // The merged model: the 4-bit base decoded, the adapters merged, a plain float checkpoint.
        assertTrue(
                run.contains(
                        "merged/: 14 4-bit weights decoded, their adapters merged, stored as"
                                + " float32: each equals the trained 4-bit weight plus its"
                                + " adapter's update"),
                run);
        String merged = Files.readString(output.resolve(SaveFormat.MERGED).resolve("config.json"));
        assertFalse(merged.contains("quantization_config"), merged);
        assertTrue(
                run.contains(
                        "note: --bnb_4bit_compute_dtype bfloat16: the 4-bit layers compute in the"
                                + " run's type, float32"),
                run);
        // The sharded checkpoint holds the packed base as it is: steps 4 to 6 again, the same.
        String resumed =
                qlora(
                        directory.resolve("resumed"),
                        "--resume_from_checkpoint",
                        output.resolve("checkpoint-3").toString());
        Matcher step = STEP.matcher(resumed);
        List<String> again = new ArrayList<>();
        while (step.find()) {
            again.add(step.group(0).replaceAll(" tokens_per_s=.*", ""));
        }
        Matcher first = STEP.matcher(run);
        List<String> expected = new ArrayList<>();
        while (first.find()) {
            expected.add(first.group(0).replaceAll(" tokens_per_s=.*", ""));
        }
        assertEquals(expected.subList(3, 6), again, resumed);
    }

    /** A 6-step QLoRA run on llama-tiny with a checkpoint every 3 steps; returns its output. */
    private static String qlora(Path output, String... extra) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--model_name_or_path", "llama-tiny",
                                "--use_peft_lora", "True",
                                "--use_4bit_quantization", "True",
                                "--use_nested_quant", "True",
                                "--bnb_4bit_compute_dtype", "bfloat16",
                                "--bnb_4bit_quant_storage_dtype", "bfloat16",
                                "--max_steps", "6",
                                "--learning_rate", "1e-2",
                                "--logging_steps", "1",
                                "--save_strategy", "steps",
                                "--save_steps", "3",
                                "--eval_strategy", "no",
                                "--exact_match_samples", "0",
                                "--output_dir", output.toString()));
        args.addAll(List.of(extra));
        return succeeds(args);
    }

    /** Runs {@code finetune} in this process, expecting success; returns its output. */
    static String succeeds(List<String> args) {
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        assertEquals(0, line.execute(args.toArray(new String[0])), out.toString());
        return out.toString();
    }

    @Test
    void withoutSaveBaseModelTheAdaptersNameTheModelTheyTrainedOn(@TempDir Path directory)
            throws Exception {
        Path output = directory.resolve("lora");
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        int code =
                line.execute(
                        "--model_name_or_path", "llama-tiny",
                        "--use_peft_lora", "True",
                        "--max_steps", "1",
                        "--eval_strategy", "no",
                        "--exact_match_samples", "0",
                        "--output_dir", output.toString());
        assertEquals(0, code, out.toString());
        JsonObject adapterConfig =
                JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                        .getAsJsonObject();
        assertEquals("llama-tiny", adapterConfig.get("base_model_name_or_path").getAsString());
        assertFalse(Files.exists(output.resolve(SaveFormat.BASE)), "no base/ without the flag");
    }

    @Test
    void aDatasetSmallerThanOneGlobalBatchIsNoted(@TempDir Path directory) throws Exception {
        Path sixTokens = Files.writeString(directory.resolve("six.txt"), "abcdef\nghijkl\n");
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        int code =
                line.execute(
                        "--dataset_name", sixTokens.toString(),
                        "--validation_split_percentage", "50",
                        "--max_steps", "1",
                        "--exact_match_samples", "0",
                        "--output_dir", directory.resolve("out").toString());
        assertEquals(0, code, out.toString());
        assertTrue(
                out.toString()
                        .contains(
                                "note: the train split makes 1 sequences, fewer than one global"
                                        + " batch of 8 (--per_device_train_batch_size 8 x 1 ranks"
                                        + " x --gradient_accumulation_steps 1)"),
                out.toString());
    }

    @Test
    void aWrongLayerClassNamesTheFlagAndTheModelsLayers(@TempDir Path directory) {
        FinetuneCommand command = new FinetuneCommand();
        new CommandLine(command)
                .parseArgs(
                        "--output_dir", directory.resolve("out").toString(),
                        "--max_steps", "1",
                        "--model_name_or_path", "llama-tiny",
                        "--fsdp_transformer_layer_cls_to_wrap", "LlamaDecoderLayer,GPT2Block");
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        String message = error.getMessage();
        for (String part :
                List.of(
                        "--fsdp_transformer_layer_cls_to_wrap GPT2Block:",
                        "LlamaDecoderLayer, ",
                        "LlamaAttention",
                        "leave the flag")) {
            assertTrue(message.contains(part), part + " in " + message);
        }
        assertFalse(message.contains("WrapPolicy"), message);
    }

    /** Asserts that a model directory's tokenizer carries the ChatML template. */
    private static void assertChatModel(Path directory) throws Exception {
        JinjaChatTemplate template =
                JinjaChatTemplate.read(directory.resolve(ChatTemplate.CONFIG_FILE));
        assertNotNull(template, directory + " has a chat_template");
        assertEquals(ChatTemplate.END, template.endOfTurn());
        assertTrue(
                template.generationPrompt(List.of()).endsWith(ChatTemplate.START + "assistant\n"));
    }

    private static String assertFails(String expected, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of("--output_dir", "never", "--max_steps", "1"));
        args.addAll(List.of(extra));
        FinetuneCommand command = new FinetuneCommand();
        new CommandLine(command).parseArgs(args.toArray(new String[0]));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertTrue(error.getMessage().contains(expected), error.getMessage());
        return error.getMessage();
    }
}
