package ai.djl.fsdp.zoo.t5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.cli.Fsdp;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.finetune.FinetuneCommand;
import ai.djl.fsdp.zoo.finetune.data.ByteLevelTokenizer;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.SaveFormat;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code finetune} on a tiny T5 checkpoint (written here, byte-level tokenizer) with LoRA on its
 * default targets: 2 ranks (real processes) end where 1 rank ends, the step losses and eval losses
 * within 2e-5 relative (the global token mean over the target tokens; the 5 eval pairs, which 2
 * ranks read as 3 each, counted once each); the adapters are saved in PEFT's format as {@code
 * SEQ_2_SEQ_LM} on T5's {@code q} and {@code v}, and put back on the base they give the merged
 * model's logits; exact match on the generated labels, before and after training, counts as many
 * correct on 2 ranks (3 sources: one rank generates an uncounted extra batch) as on 1. Bad input: a
 * dataset without the target field, and a task that does not fit.
 */
class Seq2SeqFinetuneTest {

    private static final double TOLERANCE = 2e-5;
    private static final Pattern EXACT =
            Pattern.compile("exact_match (before|after) training: (\\d+)/(\\d+) ");

    private static final String[] SUBJECTS = {"the film", "our meal", "this book", "the trip"};
    private static final String[][] LABELS = {
        {"positive", "great", "lovely", "superb"},
        {"negative", "awful", "dull", "poor"},
        {"neutral", "average", "fine", "ordinary"}
    };

    /** Writes a tiny T5 with weights and the byte-level tokenizer. */
    static Path tinyT5(Path directory) throws Exception {
        Path model = Files.createDirectories(directory.resolve("t5"));
        try (NDManager manager = TestModels.newManager()) {
            T5ForConditionalGeneration t5 =
                    (T5ForConditionalGeneration)
                            Models.createPretrained(
                                    T5Config.of(257, 32, 4, 64, 2, 2, "relu"), manager);
            HfCheckpoint.save(t5, model);
        }
        ByteLevelTokenizer.write(model.resolve("tokenizer.json"));
        return model;
    }

    /**
     * Writes sentences labelled by their adjective's sentiment, as train and test splits: 30, 6.
     */
    static Path splits(Path directory) throws Exception {
        return splits(directory, 6);
    }

    /**
     * Writes the 36 sentences as train and test splits, every {@code every}th one held out: 7 gives
     * 31 and 5, an odd eval split that 2 ranks read with one example repeated as padding.
     */
    static Path splits(Path directory, int every) throws Exception {
        Path data = Files.createDirectories(directory.resolve("data"));
        List<String> train = new ArrayList<>();
        List<String> test = new ArrayList<>();
        int n = 0;
        for (String subject : SUBJECTS) {
            for (String[] label : LABELS) {
                for (int word = 1; word < label.length; word++) {
                    String line =
                            String.format(
                                    Locale.ROOT,
                                    "{\"source\": \"%s was %s\", \"target\": \"%s\"}",
                                    subject,
                                    label[word],
                                    label[0]);
                    (n++ % every == every - 1 ? test : train).add(line);
                }
            }
        }
        Files.write(data.resolve("train.jsonl"), train);
        Files.write(data.resolve("test.jsonl"), test);
        return data;
    }

    private static List<String> arguments(Path model, Path data, Path output, int batch) {
        return List.of(
                "finetune",
                "--model_name_or_path",
                model.toString(),
                "--dataset_name",
                data.toString(),
                "--task",
                "seq2seq",
                "--max_source_length",
                "32",
                "--max_target_length",
                "6",
                "--per_device_train_batch_size",
                Integer.toString(batch),
                "--per_device_eval_batch_size",
                "2",
                "--max_steps",
                "3",
                "--logging_steps",
                "1",
                "--eval_strategy",
                "steps",
                "--eval_steps",
                "3",
                "--learning_rate",
                "1e-2",
                "--use_peft_lora",
                "True",
                "--lora_r",
                "4",
                "--lora_alpha",
                "16",
                "--lora_dropout",
                "0",
                "--exact_match_samples",
                "3",
                "--exact_match_batch_size",
                "1",
                "--output_dir",
                output.toString());
    }

    private static String run(int ranks, List<String> args) {
        try (RankProcesses job =
                RankProcesses.builder(Fsdp.class)
                        .worldSize(ranks)
                        .args(args.toArray(new String[0]))
                        .timeout(Duration.ofMinutes(5))
                        .start()) {
            return job.await().assertAllSucceeded().rank(0).output();
        }
    }

    private static List<Double> figures(Path output, String key) throws Exception {
        List<Double> values = new ArrayList<>();
        for (String line : Files.readAllLines(output.resolve("metrics.jsonl"))) {
            JsonObject row = JsonParser.parseString(line).getAsJsonObject();
            if (row.has(key)) {
                values.add(row.get(key).getAsDouble());
            }
        }
        return values;
    }

    @Test
    void twoRanksEqualOneAndTheAdaptersLoadBack(@TempDir Path directory) throws Exception {
        Path model = tinyT5(directory);
        Path data = splits(directory, 7);
        Path one = directory.resolve("one");
        Path two = directory.resolve("two");
        String single = run(1, arguments(model, data, one, 4));
        String pair = run(2, arguments(model, data, two, 2));
        for (String key : new String[] {"loss", "eval_loss"}) {
            List<Double> a = figures(one, key);
            List<Double> b = figures(two, key);
            assertEquals(key.equals("loss") ? 3 : 2, a.size(), key + " " + a);
            assertEquals(a.size(), b.size(), key);
            for (int i = 0; i < a.size(); i++) {
                double relative = Math.abs(a.get(i) - b.get(i)) / Math.abs(a.get(i));
                assertTrue(relative < TOLERANCE, key + ": 1 rank " + a + ", 2 ranks " + b);
            }
            System.out.printf(Locale.ROOT, "%s: 1 rank %s, 2 ranks %s%n", key, a, b);
        }
        // 3 sources: on 2 ranks the second generates one and then its first again, uncounted.
        assertEquals(exactMatches(single), exactMatches(pair), single + pair);
        LoraConfig saved = Lora.readConfig(two);
        assertEquals("SEQ_2_SEQ_LM", saved.getTaskType());
        assertEquals(List.of("q", "v"), saved.getTargetModules());
        assertLoadsBack(model, two);
    }

    /** Returns the correct counts of the exact-match lines, before and after, of 3 each. */
    private static List<String> exactMatches(String out) {
        List<String> correct = new ArrayList<>();
        Matcher matcher = EXACT.matcher(out);
        while (matcher.find()) {
            assertEquals("3", matcher.group(3), out);
            correct.add(matcher.group(1) + " " + matcher.group(2));
        }
        assertEquals(2, correct.size(), out);
        return correct;
    }

    /** The adapters put on the base give the merged model's logits. */
    private static void assertLoadsBack(Path base, Path output) throws Exception {
        try (NDManager manager = TestModels.newManager()) {
            T5ForConditionalGeneration adapted =
                    (T5ForConditionalGeneration) Models.loadPretrained(base, manager);
            Lora.load(adapted, output);
            T5ForConditionalGeneration merged =
                    (T5ForConditionalGeneration)
                            Models.loadPretrained(output.resolve(SaveFormat.MERGED), manager);
            NDList inputs =
                    new NDList(
                            manager.create(new long[] {40, 41, 42, 1}).reshape(1, 4),
                            manager.create(new long[] {0, 50, 51}).reshape(1, 3));
            NDArray a = adapted.forward(new ParameterStore(manager, false), inputs, false).head();
            NDArray b = merged.forward(new ParameterStore(manager, false), inputs, false).head();
            float difference = TestModels.maxDiff(a, b);
            assertTrue(difference < 1e-4, "adapters on the base against merged: " + difference);
        }
    }

    @Test
    void badInputIsNamedInOneLine(@TempDir Path directory) throws Exception {
        Path model = tinyT5(directory);
        Path data = splits(directory);
        Path output = directory.resolve("never");
        List<String> given = arguments(model, data, output, 2);
        List<String> args = new ArrayList<>(given.subList(1, given.size()));
        args.addAll(List.of("--target_field", "label"));
        assertRefused("has no field 'label' (--target_field)", args);
        List<String> task = new ArrayList<>(given.subList(1, given.size()));
        task.set(task.indexOf("seq2seq"), "causal_lm");
        assertRefused("--task causal_lm does not fit model_type t5", task);
        List<String> chat = new ArrayList<>(given.subList(1, given.size()));
        chat.set(chat.indexOf(data.toString()), "arithmetic-chat");
        assertRefused("holds texts or conversations, but a seq2seq model trains on", chat);
        assertFalse(Files.exists(output), "nothing is written");
    }

    /** T5's and Flan-T5's tokenizer.json is Unigram: its vocabulary a list of [piece, score]. */
    @Test
    void aT5WithAUnigramTokenizerTrains(@TempDir Path directory) throws Exception {
        Path model = tinyT5(directory);
        TestModels.unigramTokenizer(model.resolve("tokenizer.json"));
        Path output = directory.resolve("unigram");
        String out =
                finetuneHere(
                        "--model_name_or_path",
                        model.toString(),
                        "--dataset_name",
                        splits(directory).toString(),
                        "--max_steps",
                        "1",
                        "--eval_strategy",
                        "no",
                        "--exact_match_samples",
                        "0",
                        "--output_dir",
                        output.toString());
        assertTrue(out.contains("step=1 "), out);
        JsonObject saved =
                JsonParser.parseString(Files.readString(output.resolve("tokenizer.json")))
                        .getAsJsonObject();
        assertEquals("Unigram", saved.getAsJsonObject("model").get("type").getAsString());
        assertEquals(48, saved.getAsJsonObject("model").getAsJsonArray("vocab").size());
    }

    @Test
    void theBuiltInDemoRunsAndCutTargetsAreCountedOnce(@TempDir Path directory) {
        String out =
                finetuneHere(
                        "--model_name_or_path", "t5-tiny",
                        "--dataset_name", "sentiment-labels",
                        "--max_target_length", "4",
                        "--max_steps", "2",
                        "--logging_steps", "1",
                        "--exact_match_samples", "0",
                        "--output_dir", directory.resolve("demo").toString());
        String cut = "note: 2730 train targets are longer than --max_target_length 4 tokens";
        assertEquals(1, out.split(cut, -1).length - 1, out);
        assertTrue(out.contains("step=2 "), out);
    }

    /** Runs finetune in this process, on one rank; returns its output once it succeeded. */
    private static String finetuneHere(String... args) {
        StringWriter out = new StringWriter();
        CommandLine line = new CommandLine(new FinetuneCommand());
        line.setOut(new PrintWriter(out));
        assertEquals(0, line.execute(args), out.toString());
        return out.toString();
    }

    private static void assertRefused(String expected, List<String> args) {
        Callable<Integer> command = new FinetuneCommand();
        CommandLine line = new CommandLine(command);
        line.setOut(new PrintWriter(new StringWriter()));
        line.parseArgs(args.toArray(new String[0]));
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, command::call);
        assertTrue(error.getMessage().contains(expected), error.getMessage());
        assertEquals(1, error.getMessage().lines().count(), error.getMessage());
    }
}
