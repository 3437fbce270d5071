package ai.djl.fsdp.zoo.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.Models;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDManager;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
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
 * {@code bin/fsdp finetune} end to end: two ranks train GPT-2 fully and Llama with LoRA on the King
 * James Bible with the real GPT-2 tokenizer; the loss falls and the outputs load. One rank
 * in-process covers the unsharded job; bad command lines fail with the flag named.
 */
class FinetuneCommandTest {

    private static final Pattern STEP = Pattern.compile("step=(\\d+) loss=([0-9.]+)");

    private static List<String> smallRun(String model, Path output) {
        return new ArrayList<>(
                List.of(
                        "--model_name_or_path",
                        model,
                        "--tokenizer_name",
                        TestModels.sharedData("gpt2-tokenizer.json").toString(),
                        "--dataset",
                        TestModels.sharedData("kjv.txt").toString(),
                        "--max_seq_len",
                        "32",
                        "--per_device_train_batch_size",
                        "2",
                        "--max_steps",
                        "6",
                        "--learning_rate",
                        "1e-2",
                        "--output_dir",
                        output.toString()));
    }

    /** Returns the losses of the step lines, in order, checking that every step printed one. */
    private static List<Double> losses(String output, int steps) {
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
        double first = losses.get(0);
        double last = losses.get(losses.size() - 1);
        assertTrue(last < first - 0.1, "the loss fell: " + losses);
    }

    private static RankProcesses.Results launch(List<String> args) {
        List<String> command = new ArrayList<>(List.of("finetune"));
        command.addAll(args);
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(2)
                        .args(command.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(4))
                        .start()) {
            return job.await().assertAllSucceeded();
        }
    }

    @Test
    void twoRanksTrainGpt2FullyWithFullShard(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("gpt2");
        RankProcesses.Results results = launch(smallRun("gpt2-tiny", output));
        assertLossFell(losses(results.rank(0).output(), 6));
        assertTrue(!STEP.matcher(results.rank(1).output()).find(), "only rank 0 prints steps");
        for (int rank = 0; rank < 2; rank++) {
            assertTrue(
                    results.rank(rank).output().contains("rank=" + rank + " model_state_bytes="));
        }
        try (NDManager manager = TestModels.newManager()) {
            CausalLM trained = Models.load(output, manager);
            assertEquals("gpt2", trained.getConfig().modelType());
        }
        assertTrue(Files.isRegularFile(output.resolve("tokenizer.json")));

        // Go on from the saved checkpoint (sharded straight from its files), with its tokenizer.
        Path adapters = directory.resolve("gpt2-lora");
        List<String> resumed =
                new ArrayList<>(
                        List.of(
                                "--model_name_or_path",
                                output.toString(),
                                "--dataset",
                                TestModels.sharedData("kjv.txt").toString(),
                                "--max_seq_len",
                                "32",
                                "--per_device_train_batch_size",
                                "2",
                                "--max_steps",
                                "3",
                                "--use_peft_lora",
                                "--output_dir",
                                adapters.toString()));
        losses(launch(resumed).rank(0).output(), 3);
        assertTrue(Files.isRegularFile(adapters.resolve(Lora.WEIGHTS_FILE)));
    }

    @Test
    void twoRanksTrainLlamaLoraWithShardGradOp(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("llama-lora");
        List<String> args = smallRun("llama-tiny", output);
        args.addAll(
                List.of(
                        "--use_peft_lora",
                        "--lora_target_modules",
                        "q_proj,v_proj",
                        "--sharding_strategy",
                        "SHARD_GRAD_OP"));
        RankProcesses.Results results = launch(args);
        assertLossFell(losses(results.rank(0).output(), 6));
        try (NDManager manager = TestModels.newManager()) {
            CausalLM adapted = Models.create(Models.builtin("llama-tiny"), manager);
            assertEquals(8, Lora.load(adapted, output).getRank(), "the saved configuration");
            assertEquals(4, Lora.adapters(adapted).size(), "q_proj and v_proj of 2 layers");
            CausalLM merged = Models.load(output.resolve(FinetuneCommand.MERGED), manager);
            assertTrue(Lora.adapters(merged).isEmpty());
        }
    }

    @Test
    void oneRankTrainsWithoutLaunch(@TempDir Path directory) {
        Path output = directory.resolve("one");
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        List<String> args = option(smallRun("gpt2-tiny", output), "--max_steps", 3);
        args.addAll(List.of("--sharding_strategy", "NO_SHARD"));
        assertEquals(0, line.execute(args.toArray(new String[0])), out.toString());
        losses(out.toString(), 3);
        assertTrue(Files.isRegularFile(output.resolve("model.safetensors")));
    }

    @Test
    void badCommandLinesNameTheProblem(@TempDir Path directory) throws Exception {
        Path output = directory.resolve("never");
        assertEquals(
                2,
                new CommandLine(new FinetuneCommand())
                        .setErr(new PrintWriter(new StringWriter()))
                        .execute("--dataset", "x", "--output_dir", "y", "--no_such_flag"));
        assertFails(
                "--dataset",
                option(
                        smallRun("gpt2-tiny", output),
                        "--dataset",
                        directory.resolve("missing.txt")));
        assertFails(
                "neither a checkpoint directory",
                option(
                        smallRun("gpt2-tiny", output),
                        "--model_name_or_path",
                        directory.resolve("nope")));
        assertFails(
                "--max_seq_len 1024", option(smallRun("gpt2-tiny", output), "--max_seq_len", 1024));
        Path tiny = Files.writeString(directory.resolve("tiny.txt"), "In the beginning");
        assertFails(
                "fewer than one block", option(smallRun("gpt2-tiny", output), "--dataset", tiny));
        assertTrue(!Files.exists(output), "nothing is written when the run fails");
    }

    private static List<String> option(List<String> args, String flag, Object value) {
        int at = args.indexOf(flag);
        args.set(at + 1, value.toString());
        return args;
    }

    private static void assertFails(String expected, List<String> args) throws Exception {
        FinetuneCommand command = new FinetuneCommand();
        new CommandLine(command).parseArgs(args.toArray(new String[0]));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertTrue(error.getMessage().contains(expected), error.getMessage());
    }
}
