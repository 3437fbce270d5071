package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.config.AccelerateDefaultsTest;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.generate.GenerateRuns;
import ai.djl.fsdp.zoo.generate.ShardedGenerateMain;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's recipe command ({@code --chat_template_format chatml --add_special_tokens False ...
 * --use_peft_lora True}) on a Llama checkpoint whose tokenizer fills its vocabulary: the chat
 * markers grow the embedding and the untied head to a multiple of 8 under FSDP on two ranks, they
 * train whole beside the adapters and are saved with them under PEFT's keys, the merged model is of
 * the new size, and the adapters alone on the original checkpoint generate what the merged model
 * generates, in one process and on two ranks.
 */
class GrownVocabularyTest {

    private static final String PROMPT = "What is 1 + 1?";

    private static final String RECIPE =
            "--seed 100 --dataset_name arithmetic-chat --chat_template_format chatml"
                    + " --add_special_tokens False --append_concat_token False --splits train,test"
                    + " --max_seq_len 64 --num_train_epochs 1 --max_steps 4 --logging_steps 1"
                    + " --log_level info --logging_strategy steps --evaluation_strategy epoch"
                    + " --save_strategy epoch --push_to_hub --hub_private_repo True --hub_strategy"
                    + " every_save --bf16 True --packing True --learning_rate 1e-3"
                    + " --lr_scheduler_type cosine --weight_decay 1e-4 --warmup_ratio 0.0"
                    + " --max_grad_norm 1.0 --per_device_train_batch_size 2"
                    + " --per_device_eval_batch_size 2 --gradient_accumulation_steps 2"
                    + " --gradient_checkpointing True --use_reentrant False --dataset_text_field"
                    + " content --use_flash_attn True --use_peft_lora True --lora_r 8 --lora_alpha"
                    + " 16 --lora_dropout 0.1 --lora_target_modules all-linear"
                    + " --use_4bit_quantization False --exact_match_samples 0";

    @Test
    void theRecipeGrowsTheByteLevelVocabulary(@TempDir Path directory) throws Exception {
        Path checkpoint = checkpoint(directory, 257);
        ByteLevelTokenizer.write(checkpoint.resolve(Tokenizers.FILE));
        assertRecipeGrows(directory, checkpoint, 257, 264);
    }

    /** A GPT-2 checkpoint, its head tied to wte: the one weight grows, trains and is saved once. */
    @Test
    void theRecipeGrowsATiedVocabulary(@TempDir Path directory) throws Exception {
        Path checkpoint = checkpoint(directory, "gpt2-tiny", 257);
        ByteLevelTokenizer.write(checkpoint.resolve(Tokenizers.FILE));
        assertRecipeGrows(directory, checkpoint, 257, 264);
    }

    /** The issue's own case: GPT-2's tokenizer of 50,257 tokens on a checkpoint of 50,257 rows. */
    @Test
    void theRecipeGrowsGpt2sVocabulary(@TempDir Path directory) throws Exception {
        Path tokenizer = TestModels.sharedData("gpt2-tokenizer.json");
        Path checkpoint = checkpoint(directory, 50257);
        Files.copy(tokenizer, checkpoint.resolve(Tokenizers.FILE));
        assertRecipeGrows(directory, checkpoint, 50257, 50264);
    }

    /**
     * A sharded checkpoint of a grown run (LoRA, the embedding and head training whole) resumes
     * exactly: on two ranks, steps 5-8 print the uninterrupted run's losses to the last digit; on
     * one rank with the same global batch, within float summation's tolerance.
     */
    @Test
    void aGrownRunResumesOnTwoRanksAndOnOne(@TempDir Path directory) throws Exception {
        Path checkpoint = checkpoint(directory, 257);
        ByteLevelTokenizer.write(checkpoint.resolve(Tokenizers.FILE));
        List<String> run =
                List.of(
                        "--model_name_or_path", checkpoint.toString(),
                        "--chat_template_format", "chatml",
                        "--use_peft_lora", "True",
                        "--lora_dropout", "0",
                        "--max_seq_len", "64",
                        "--max_steps", "8",
                        "--logging_steps", "1",
                        "--eval_strategy", "no",
                        "--exact_match_samples", "0");
        Path first = directory.resolve("first");
        finetune(2, first, run, "--per_device_train_batch_size", "4", "--save_steps", "4");
        Path saved = CheckpointDirectory.of(first, 4);
        for (int ranks : new int[] {2, 1}) {
            Path resumed = directory.resolve("resumed-on-" + ranks);
            String out =
                    finetune(
                            ranks,
                            resumed,
                            run,
                            "--per_device_train_batch_size",
                            String.valueOf(8 / ranks),
                            "--save_strategy",
                            "no",
                            "--resume_from_checkpoint",
                            saved.toString());
            assertTrue(out.contains("resumed from " + saved + " after step 4"), out);
            // The resumed log starts with the saved run's rows up to the checkpoint's step.
            List<Double> expected = losses(first);
            List<Double> actual = losses(resumed);
            assertEquals(8, actual.size(), actual.toString());
            if (ranks == 2) {
                assertEquals(expected, actual, "bit for bit on the ranks that saved");
            } else {
                for (int step = 5; step <= 8; step++) {
                    double loss = expected.get(step - 1);
                    assertEquals(loss, actual.get(step - 1), 1e-5 * loss, "step " + step);
                }
            }
            assertEquals(264, ModelFamilies.read(resumed.resolve(SaveFormat.MERGED)).vocabSize());
        }
    }

    /**
     * {@code --mean_resizing False}: the new rows are drawn from the normal of the config's {@code
     * initializer_range} (0.02), not around the stored rows' mean; a learning rate far below
     * float32's resolution of the weights leaves them as drawn in the saved model.
     */
    @Test
    void withoutMeanResizingTheNewRowsAreTheConfiguredNormal(@TempDir Path directory)
            throws Exception {
        Path checkpoint = checkpoint(directory, 257);
        ByteLevelTokenizer.write(checkpoint.resolve(Tokenizers.FILE));
        Path output = directory.resolve("normal");
        String out =
                finetune(
                        1,
                        output,
                        List.of(
                                "--model_name_or_path", checkpoint.toString(),
                                "--chat_template_format", "chatml",
                                "--mean_resizing", "False",
                                "--learning_rate", "1e-30",
                                "--max_seq_len", "32",
                                "--max_steps", "1",
                                "--eval_strategy", "no",
                                "--exact_match_samples", "0"));
        assertTrue(out.contains("new rows drawn from a normal of std 0.02"), out);
        try (NDManager manager = TestModels.newManager();
                SafetensorsCheckpoint saved = SafetensorsCheckpoint.open(output)) {
            float[] table = saved.read(manager, "model.embed_tokens.weight").toFloatArray();
            int width = table.length / 264;
            double squares = 0;
            for (int i = 257 * width; i < table.length; i++) {
                squares += table[i] * table[i];
            }
            double std = Math.sqrt(squares / (7.0 * width));
            assertEquals(0.02, std, 0.004, "the 7 new rows' spread (448 draws)");
        }
    }

    /** A checkpoint of config.json alone (fresh weights) is built at the grown size. */
    @Test
    void aConfigAloneIsBuiltAtTheGrownSize(@TempDir Path directory) throws Exception {
        Path checkpoint = checkpoint(directory, 257);
        Files.delete(checkpoint.resolve("model.safetensors"));
        ByteLevelTokenizer.write(checkpoint.resolve(Tokenizers.FILE));
        Path output = directory.resolve("fresh");
        String out =
                finetune(
                        1,
                        output,
                        List.of(
                                "--model_name_or_path", checkpoint.toString(),
                                "--chat_template_format", "chatml",
                                "--max_seq_len", "32",
                                "--max_steps", "1",
                                "--eval_strategy", "no",
                                "--exact_match_samples", "0"));
        assertTrue(
                out.contains(
                        "the checkpoint 257: the model, fresh, is built with 264 rows"
                                + " (--pad_to_multiple_of 8)"),
                out);
        assertEquals(264, ModelFamilies.read(output).vocabSize());
    }

    private static String finetune(int ranks, Path output, List<String> run, String... extra) {
        List<String> command =
                new ArrayList<>(List.of("finetune", "--output_dir", output.toString()));
        command.addAll(run);
        command.addAll(List.of(extra));
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(ranks)
                        .args(command.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(5))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    /** The step losses of a run's {@code metrics.jsonl}, at full precision. */
    private static List<Double> losses(Path output) throws Exception {
        List<Double> losses = new ArrayList<>();
        for (String line : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            JsonObject row = JsonParser.parseString(line).getAsJsonObject();
            if (row.has("loss")) {
                losses.add(row.get("loss").getAsDouble());
            }
        }
        return losses;
    }

    /** A Llama-shaped checkpoint (llama-tiny's shape, untied head) of {@code rows} tokens. */
    private static Path checkpoint(Path directory, int rows) throws Exception {
        return checkpoint(directory, "llama-tiny", rows);
    }

    /** A checkpoint of a built-in architecture's shape and {@code rows} tokens. */
    private static Path checkpoint(Path directory, String family, int rows) throws Exception {
        Path checkpoint = directory.resolve(family + "-" + rows);
        JsonObject json = Models.builtin(family).toJson();
        json.addProperty("vocab_size", rows);
        json.addProperty("bos_token_id", rows - 1);
        json.addProperty("eos_token_id", rows - 1);
        try (NDManager manager = TestModels.newManager()) {
            HfCheckpoint.save(Models.create(ModelFamilies.parse(json), manager), checkpoint);
        }
        return checkpoint;
    }

    private static void assertRecipeGrows(Path directory, Path checkpoint, int stored, int grown)
            throws Exception {
        Path output = directory.resolve("llama-sft-lora-fsdp");
        Path config =
                Files.writeString(
                        directory.resolve("fsdp_config.yaml"), AccelerateDefaultsTest.OLD);
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "finetune",
                                "--config_file",
                                config.toString(),
                                "--model_name_or_path",
                                checkpoint.toString(),
                                "--output_dir",
                                output.toString()));
        command.addAll(Arrays.asList(RECIPE.split(" ")));
        // The config file names GPT2Block: name this checkpoint's decoder layer instead.
        CausalLM shape = Models.forCheckpoint(ModelFamilies.read(checkpoint));
        command.addAll(
                List.of(
                        "--fsdp_transformer_layer_cls_to_wrap",
                        shape.decoderLayerClass().getSimpleName()));
        String out;
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(command.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(8))
                        .start()) {
            out = job.await().assertAllSucceeded().rank(0).output();
        }
        assertTrue(
                out.contains(
                        "the tokenizer has "
                                + (stored + 2)
                                + " tokens (with the chat template's), the checkpoint "
                                + stored
                                + ": the vocabulary grows from "
                                + stored
                                + " to "
                                + grown),
                out);
        assertTrue(out.contains("step=4 "), out);

        // What the adapters must carry: the embedding, and an untied head (a tied one is it).
        List<Parameter> vocabulary = shape.vocabularyParameters();
        List<String> names = new ArrayList<>();
        StateDict.parameters(shape)
                .forEach(
                        (name, parameter) -> {
                            if (vocabulary.contains(parameter)) {
                                names.add(name);
                            }
                        });
        JsonObject adapterConfig =
                JsonParser.parseString(Files.readString(output.resolve(Lora.CONFIG_FILE)))
                        .getAsJsonObject();
        if (names.size() == 2) {
            assertEquals(
                    "[\"embed_tokens\",\"lm_head\"]",
                    adapterConfig.get("modules_to_save").toString(),
                    "the grown embedding and head train whole, as PEFT's modules_to_save");
        } else {
            assertFalse(
                    adapterConfig.has("modules_to_save"),
                    "a tied embedding is saved, unlisted: PEFT's wrapper would untie it");
        }
        assertEquals(
                checkpoint.toString(), adapterConfig.get("base_model_name_or_path").getAsString());
        String embedding = Lora.PEFT_PREFIX + names.get(0);
        try (NDManager manager = TestModels.newManager();
                SafetensorsFile adapters = SafetensorsFile.open(output.resolve(Lora.WEIGHTS_FILE));
                SafetensorsCheckpoint original = SafetensorsCheckpoint.open(checkpoint)) {
            long width = original.info(names.get(0)).shape().get(1);
            for (String name : names) {
                assertEquals(
                        new Shape(grown, width), adapters.info(Lora.PEFT_PREFIX + name).shape());
            }
            assertEquals(
                    names.size() == 2,
                    adapters.getNames().contains(Lora.PEFT_PREFIX + "lm_head.weight"));
            assertTrue(
                    adapters.getNames().stream().anyMatch(key -> key.endsWith(".lora_A.weight")));
            // The chat markers' rows start within 1e-6 of the stored rows' mean (mean resizing's
            // spread is sqrt(1e-9) of theirs); trained, they moved far beyond it.
            float[] mean = original.read(manager, names.get(0)).mean(new int[] {0}).toFloatArray();
            float[] marker =
                    adapters.read(manager, embedding, stored * width, (stored + 1) * width)
                            .toFloatArray();
            double moved = 0;
            for (int k = 0; k < width; k++) {
                moved = Math.max(moved, Math.abs(marker[k] - mean[k]));
            }
            assertTrue(moved > 1e-4, "the <|im_start|> row trained: moved " + moved);
        }
        Path merged = output.resolve(SaveFormat.MERGED);
        assertEquals(grown, ModelFamilies.read(merged).vocabSize(), "merged/config.json");

        Path adaptersAlone = TestModels.adaptersAlone(output, directory);
        String[] fromMerged = generate(output);
        assertTrue(fromMerged[1].contains("merged model"), fromMerged[1]);
        String[] onBase = generate(adaptersAlone);
        assertTrue(onBase[1].contains("on their base " + checkpoint), onBase[1]);
        assertEquals(fromMerged[0], onBase[0], "the adapters on the original checkpoint");
        assertEquals(GenerateRuns.tokenIds(fromMerged[1]), GenerateRuns.tokenIds(onBase[1]));
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerateMain.class)
                        .worldSize(2)
                        .args(GenerateRuns.arguments(adaptersAlone, PROMPT, 8))
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            String sharded = job.await().assertAllSucceeded().rank(0).output();
            assertTrue(sharded.contains(fromMerged[0].strip()), sharded + " vs " + fromMerged[0]);
        }
    }

    /** Runs {@code generate} greedily in this process; returns its output and its notes. */
    private static String[] generate(Path model) {
        return GenerateRuns.run(model, PROMPT, 8);
    }
}
