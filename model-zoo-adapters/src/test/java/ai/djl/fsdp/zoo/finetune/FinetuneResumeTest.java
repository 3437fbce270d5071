package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.testing.RankProcesses;
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
 * adapters (only they train, so only they carry optimizer state) too.
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
                List.of(CheckpointDirectory.of(directory.resolve("second"), 8)),
                CheckpointDirectory.list(directory.resolve("second")),
                "checkpoints live in output_dir beside the final model; the limit kept one");
        assertTrue(Files.exists(directory.resolve("second").resolve("model.safetensors")));
    }

    @Test
    void aResumedLoraJobContinuesExactly(@TempDir Path directory) throws Exception {
        Path first = directory.resolve("first");
        String full = finetune(first, "--save_steps", "4", "--use_peft_lora", "True");
        String resumed =
                finetune(
                        directory.resolve("second"),
                        "--use_peft_lora",
                        "True",
                        "--resume_from_checkpoint",
                        CheckpointDirectory.of(first, 4).toString());
        assertEquals(losses(full).subList(4, 8), losses(resumed), resumed);
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

    private static void copy(Path from, Path to) throws Exception {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }
}
