package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.generate.GenerateCommand;
import ai.djl.fsdp.zoo.generate.ShardedGenerateMain;
import ai.djl.fsdp.zoo.hf.Tokenizers;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.ParameterStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code generate} on a T5 after a short LoRA {@code finetune} (a tiny T5 written by the test, the
 * byte-level tokenizer): on the merged model and on the adapters put on their base, on 1 rank and
 * sharded over 2 (real processes), it prints the target that the run's own exact-match evaluation
 * generated for the first held-out source, and its token ids are those of greedy decoding by full
 * passes over the whole prefix (no cache) of the merged model. Sampling is refused in one line.
 */
class T5CommandsTest {

    /** The longest target of the test's splits with its end-of-sequence token ("negative"). */
    private static final int TARGET_TOKENS = 9;

    private static final Pattern SAMPLE =
            Pattern.compile("exact_match after training: .* \\| sample: (.*) -> (.*)");

    @Test
    void generatePrintsWhatTheRunsEvaluationGenerated(@TempDir Path directory) throws Exception {
        Path base = Seq2SeqFinetuneTest.tinyT5(directory);
        Path data = Seq2SeqFinetuneTest.splits(directory);
        Path output = directory.resolve("run");
        StringWriter log = new StringWriter();
        CommandLine finetune = new CommandLine(new FinetuneCommand());
        finetune.setOut(new PrintWriter(log));
        int code =
                finetune.execute(
                        "--model_name_or_path", base.toString(),
                        "--dataset_name", data.toString(),
                        "--max_target_length", "16",
                        "--per_device_train_batch_size", "4",
                        "--max_steps", "12",
                        "--logging_steps", "4",
                        "--learning_rate", "3e-2",
                        "--use_peft_lora", "True",
                        "--lora_r", "8",
                        "--lora_alpha", "32",
                        "--lora_dropout", "0",
                        "--exact_match_samples", "1",
                        "--output_dir", output.toString());
        assertEquals(0, code, log.toString());
        Matcher sample = SAMPLE.matcher(log.toString());
        assertTrue(sample.find(), log.toString());
        String source = sample.group(1);
        String reply = sample.group(2).equals("(empty reply)") ? "" : sample.group(2);
        long[] expectedIds = fullPassGreedy(output.resolve(SaveFormat.MERGED), source);

        // The adapters alone, beside no merged model: generate puts them on their base.
        Path adapters = Files.createDirectories(directory.resolve("adapters"));
        for (String file : List.of(Lora.CONFIG_FILE, Lora.WEIGHTS_FILE, Tokenizers.FILE)) {
            Files.copy(output.resolve(file), adapters.resolve(file));
        }
        for (Path model : List.of(output.resolve(SaveFormat.MERGED), adapters)) {
            String[] args = {
                "--model",
                model.toString(),
                "--prompt",
                source,
                "--max_new_tokens",
                Integer.toString(TARGET_TOKENS),
                "--print_token_ids"
            };
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine generate =
                    new CommandLine(new GenerateCommand())
                            .setOut(new PrintWriter(out))
                            .setErr(new PrintWriter(err));
            assertEquals(0, generate.execute(args), err.toString());
            assertEquals(reply, out.toString().strip(), model + ": " + err);
            assertTrue(
                    err.toString().contains("token ids: " + Arrays.toString(expectedIds)),
                    model + ": full passes give " + Arrays.toString(expectedIds) + "; " + err);
            try (RankProcesses job =
                    RankProcesses.builder(ShardedGenerateMain.class)
                            .worldSize(2)
                            .args(args)
                            .timeout(Duration.ofMinutes(3))
                            .start()) {
                RankProcesses.Results results = job.await().assertAllSucceeded();
                String printed = results.rank(0).output();
                assertTrue(printed.contains(Arrays.toString(expectedIds)), model + ": " + printed);
                assertTrue(
                        printed.lines().anyMatch(line -> line.strip().equals(reply)),
                        model + " on 2 ranks: " + printed);
                assertFalse(results.rank(1).output().contains("token ids"), "only rank 0 prints");
            }
            System.out.println(model.getFileName() + ": " + source + " -> " + reply);
        }
    }

    /** Greedy decoding of a source by a full pass over the whole prefix for every token. */
    private static long[] fullPassGreedy(Path model, String source) throws Exception {
        try (NDManager manager = TestModels.newManager();
                HuggingFaceTokenizer tokenizer =
                        Tokenizers.load(model.resolve(Tokenizers.FILE), "--tokenizer")) {
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration) Models.loadPretrained(model, manager);
            T5Config config = t5.getConfig();
            long[] ids = tokenizer.encode(source).getIds();
            if (ids[ids.length - 1] != config.eosTokenId()) {
                ids = Arrays.copyOf(ids, ids.length + 1);
                ids[ids.length - 1] = config.eosTokenId();
            }
            NDArray inputs = manager.create(ids).reshape(1, ids.length);
            List<Long> prefix = new ArrayList<>(List.of(config.decoderStartTokenId()));
            ParameterStore ps = new ParameterStore(manager, false);
            for (int t = 0; t < TARGET_TOKENS; t++) {
                long[] decoder = prefix.stream().mapToLong(Long::longValue).toArray();
                long next =
                        t5.forward(
                                        ps,
                                        inputs,
                                        null,
                                        manager.create(decoder).reshape(1, decoder.length),
                                        false)
                                .get(":, -1, :")
                                .argMax(-1)
                                .toType(DataType.INT64, false)
                                .getLong();
                prefix.add(next);
                if (config.eosTokenIds().contains(next)) {
                    break;
                }
            }
            return prefix.subList(1, prefix.size()).stream().mapToLong(Long::longValue).toArray();
        }
    }

    @Test
    void samplingIsRefusedInOneLine(@TempDir Path directory) throws Exception {
        Path model = Files.createDirectories(directory.resolve("t5"));
        Files.writeString(
                model.resolve("config.json"),
                T5Config.of(257, 32, 4, 48, 1, 1, "relu").toJson().toString());
        ByteLevelTokenizer.write(model.resolve("tokenizer.json"));
        String greedy =
                ": an encoder-decoder model (model_type t5) generates greedily; leave --temperature"
                        + " at 0 and --top_k, --top_p and --seed out";
        String[][] sampling = {
            {"--temperature", "0.7", "--temperature 0.7"},
            {"--top_k", "5", "--top_k 5"},
            {"--top_p", "0.9", "--top_p 0.9"},
            {"--seed", "42", "--seed 42"}
        };
        for (String[] flag : sampling) {
            assertEquals(
                    flag[2] + greedy,
                    refusal("--model", model.toString(), "--prompt", "hi", flag[0], flag[1]));
        }
        // A negative budget, on the encoder-decoder path and on the decoder-only one.
        Path tokenizer = model.resolve("tokenizer.json");
        for (String target : new String[] {model.toString(), "gpt2-tiny"}) {
            assertEquals(
                    "--max_new_tokens -1 must be 0 or more",
                    refusal(
                            "--model",
                            target,
                            "--tokenizer",
                            tokenizer.toString(),
                            "--prompt",
                            "hi",
                            "--max_new_tokens",
                            "-1"));
        }
    }

    /** Runs generate with the arguments and returns the message it stops with. */
    private static String refusal(String... args) {
        GenerateCommand command = new GenerateCommand();
        new CommandLine(command).parseArgs(args);
        return assertThrows(IllegalArgumentException.class, command::call).getMessage();
    }
}
