package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.TestModels;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/fsdp finetune} with Hugging Face's checkpoint flags on two ranks: a run of 8 steps
 * saves {@code checkpoint-4} and {@code checkpoint-8} (keeping one, so only the newest stays), and
 * a new job resumed from a copy of {@code checkpoint-4} prints the same losses for steps 5-8 to the
 * last digit: the model, AdamW's moments, the schedule and the data position all resume; with LoRA
 * adapters (only they train, so only they carry optimizer state) too, and under other units than
 * those that saved.
 */
class FinetuneResumeTest {

    private static final Pattern STEP = Pattern.compile("step=(\\d+) epoch=\\S+ loss=([0-9.]+)");

    @Test
    void aResumedJobContinuesTheRunExactly(@TempDir Path directory) throws Exception {
        Path first = directory.resolve("first");
        String full = finetune(first, "--save_steps", "4");
        Path saved = directory.resolve("checkpoint-4-copy");
        copy(CheckpointDirectory.of(first, 4), saved);
        String resumed =
                finetune(
                        directory.resolve("second"),
                        "--save_steps",
                        "4",
                        "--save_total_limit",
                        "1",
                        "--resume_from_checkpoint",
                        saved.toString());
        assertTrue(resumed.contains("resumed from " + saved + " after step 4"), resumed);
        assertEquals(losses(full).subList(4, 8), losses(resumed), resumed);
        assertEquals(
                metricsLosses(first).subList(4, 8),
                metricsLosses(directory.resolve("second")),
                "metrics.jsonl's losses, at full precision");
        assertEquals(
                List.of(CheckpointDirectory.of(directory.resolve("second"), 8)),
                CheckpointDirectory.list(directory.resolve("second")),
                "checkpoints live in output_dir beside the final model; the limit kept one");
        assertTrue(Files.exists(directory.resolve("second").resolve("model.safetensors")));
    }

    /**
     * As Hugging Face's Trainer, an epoch's last optimizer step takes the micro-batches left when
     * they are fewer than {@code --gradient_accumulation_steps}: no batch is dropped, the plan
     * counts that step, and a job resumed after it continues exactly.
     */
    @Test
    void anEpochsLastStepTakesTheBatchesLeft(@TempDir Path directory) throws Exception {
        // 40 sequences of 16 tokens: 20 a rank, 5 batches of 4, so 3 steps an epoch.
        Path data = TestModels.smallText(directory, 20);
        List<String> both =
                List.of(
                        "--dataset_name",
                        data.toString(),
                        "--max_seq_len",
                        "16",
                        "--gradient_accumulation_steps",
                        "2");
        Path first = directory.resolve("first");
        List<String> firstJob = new ArrayList<>(both);
        firstJob.addAll(List.of("--save_steps", "4"));
        String full = finetune(first, firstJob.toArray(String[]::new));
        Matcher plan =
                Pattern.compile("(\\d+) train sequences.* \\((\\d+) per epoch\\)").matcher(full);
        assertTrue(plan.find(), full);
        // Two ranks, 4 sequences a batch (finetune's --per_device_train_batch_size here).
        int batches = ((Integer.parseInt(plan.group(1)) + 1) / 2 + 3) / 4;
        assertEquals(1, batches % 2, "the test needs an odd number of batches per epoch: " + full);
        assertEquals((batches + 1) / 2, Integer.parseInt(plan.group(2)), full);
        List<String> resumedJob = new ArrayList<>(both);
        resumedJob.addAll(
                List.of("--resume_from_checkpoint", CheckpointDirectory.of(first, 4).toString()));
        String resumed = finetune(directory.resolve("second"), resumedJob.toArray(String[]::new));
        assertEquals(losses(full).subList(4, 8), losses(resumed), resumed);
    }

    @Test
    void aResumedLoraJobContinuesExactly(@TempDir Path directory) {
        assertResumesExactly(directory, List.of("--use_peft_lora", "True"), List.of());
    }

    /**
     * A checkpoint does not depend on the units: an untied Llama trained in full (its embedding and
     * head carry AdamW's state), saved with the decoder layers as its only units (the root holding
     * the embedding and the head), resumes under the default units (each of them alone) with the
     * same losses.
     */
    @Test
    void aCheckpointResumesUnderOtherUnits(@TempDir Path directory) {
        assertResumesExactly(
                directory,
                List.of("--model_name_or_path", "llama-tiny"),
                List.of("--fsdp_transformer_layer_cls_to_wrap", "LlamaDecoderLayer"));
    }

    /**
     * Trains 8 steps with {@code both} and {@code firstOnly}, saving {@code checkpoint-4}, then
     * resumes a second job with {@code both} from it: its steps 5-8 print the first job's losses.
     */
    private static void assertResumesExactly(
            Path directory, List<String> both, List<String> firstOnly) {
        Path first = directory.resolve("first");
        List<String> firstJob = new ArrayList<>(both);
        firstJob.addAll(firstOnly);
        firstJob.addAll(List.of("--save_steps", "4"));
        String full = finetune(first, firstJob.toArray(String[]::new));
        List<String> resumedJob = new ArrayList<>(both);
        resumedJob.addAll(
                List.of("--resume_from_checkpoint", CheckpointDirectory.of(first, 4).toString()));
        String resumed = finetune(directory.resolve("second"), resumedJob.toArray(String[]::new));
        assertEquals(losses(full).subList(4, 8), losses(resumed), resumed);
    }

    /**
     * {@code metrics.jsonl} is in the output directory while the job trains (before the model is
     * saved), one line per logged step; the checkpoint records its epoch; a job resumed into the
     * same output keeps the earlier lines up to the checkpoint's step, as they were, and adds its
     * own after them.
     */
    @Test
    void metricsGrowAsTheJobRunsAndSurviveAResume(@TempDir Path directory) throws Exception {
        Path data = TestModels.smallText(directory, 24);
        Path output = directory.resolve("out");
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "finetune",
                                "--output_dir",
                                output.toString(),
                                "--dataset_name",
                                data.toString(),
                                "--max_seq_len",
                                "16",
                                "--max_steps",
                                "6",
                                "--save_steps",
                                "4",
                                "--per_device_train_batch_size",
                                "8",
                                "--logging_steps",
                                "1",
                                "--eval_strategy",
                                "no",
                                "--exact_match_samples",
                                "0"));
        Path log = output.resolve("metrics.jsonl");
        Path model = output.resolve("model.safetensors");
        int seenWhileTraining = 0;
        String first;
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            while (job.isAlive(0)) {
                if (Files.exists(log) && !Files.exists(model)) {
                    seenWhileTraining = Math.max(seenWhileTraining, stepRows(log).size());
                }
                Thread.sleep(20);
            }
            first = job.await().assertAllSucceeded().rank(0).output();
        }
        assertTrue(seenWhileTraining >= 1, "metrics.jsonl had rows before the model was saved");
        List<String> rows = stepRows(log);
        assertEquals(6, rows.size(), rows.toString());
        Matcher perEpoch = Pattern.compile("\\((\\d+) per epoch\\)").matcher(first);
        assertTrue(perEpoch.find(), first);
        int stepsPerEpoch = Integer.parseInt(perEpoch.group(1));
        assertTrue(stepsPerEpoch < 4, "checkpoint-4 is past the first epoch: " + first);
        JsonObject state =
                JsonParser.parseString(
                                Files.readString(
                                        CheckpointDirectory.of(output, 4)
                                                .resolve("trainer_state.json")))
                        .getAsJsonObject();
        int epoch = (4 - 1) / stepsPerEpoch;
        assertEquals(epoch, state.get("epoch").getAsInt(), state.toString());

        args.addAll(
                List.of("--resume_from_checkpoint", CheckpointDirectory.of(output, 4).toString()));
        String resumed;
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            resumed = job.await().assertAllSucceeded().rank(0).output();
        }
        assertTrue(resumed.contains("after step 4 (epoch " + epoch + ")"), resumed);
        List<String> after = stepRows(log);
        assertEquals(rows.subList(0, 4), after.subList(0, 4), "the earlier lines, as they were");
        assertEquals(6, after.size(), after.toString());
        assertEquals(losses(first).subList(4, 6), losses(resumed), resumed);
    }

    /** The step rows of a metrics log, as written. */
    private static List<String> stepRows(Path log) throws Exception {
        List<String> rows = new ArrayList<>();
        for (String line : Files.readAllLines(log)) {
            if (line.contains("\"loss\"")) {
                rows.add(line);
            }
        }
        return rows;
    }

    private static String finetune(Path output, String... extra) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "finetune",
                                "--output_dir",
                                output.toString(),
                                "--max_steps",
                                "8",
                                "--per_device_train_batch_size",
                                "4",
                                "--logging_steps",
                                "1",
                                "--eval_strategy",
                                "no",
                                "--exact_match_samples",
                                "0"));
        command.addAll(List.of(extra));
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(command.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    /** The printed losses by step, from the first printed step on. */
    private static List<String> losses(String output) {
        List<String> losses = new ArrayList<>();
        Matcher matcher = STEP.matcher(output);
        while (matcher.find()) {
            losses.add(matcher.group(1) + ":" + matcher.group(2));
        }
        return losses;
    }

    /** The losses of {@code metrics.jsonl}'s step rows, as written (full precision). */
    private static List<String> metricsLosses(Path output) throws Exception {
        List<String> losses = new ArrayList<>();
        for (String line : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            JsonObject row = JsonParser.parseString(line).getAsJsonObject();
            if (row.has("loss")) {
                losses.add(row.get("step").getAsInt() + ":" + row.get("loss").getAsString());
            }
        }
        return losses;
    }

    private static void copy(Path from, Path to) throws Exception {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }
}
