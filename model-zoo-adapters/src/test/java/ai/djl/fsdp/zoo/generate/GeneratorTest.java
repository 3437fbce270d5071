package ai.djl.fsdp.zoo.generate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.fsdp.testing.RankProcesses;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class GeneratorTest {

    private static final long[] PROMPT = {15496, 995, 11};

    @TempDir Path dir;

    @Test
    void greedyWithCacheMatchesArgmaxOfFullRecompute() {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            try (NDManager manager = TestModels.newManager()) {
                CausalLM model = TestModels.seeded(name, manager, 21);
                GenerationConfig greedy = GenerationConfig.builder().optMaxNewTokens(6).build();
                long[] cached = new Generator(model).generate(manager, PROMPT, greedy);

                long[] sequence = PROMPT;
                for (int i = 0; i < 6; i++) {
                    NDArray ids = manager.create(sequence).reshape(1, sequence.length);
                    float[] last =
                            TestModels.logits(model, ids, null)
                                    .get(0, sequence.length - 1)
                                    .toFloatArray();
                    sequence =
                            LongStream.concat(
                                            Arrays.stream(sequence),
                                            LongStream.of(Sampler.argmax(last)))
                                    .toArray();
                }
                assertArrayEquals(
                        Arrays.copyOfRange(sequence, PROMPT.length, sequence.length), cached, name);
            }
        }
    }

    @Test
    void leftPaddedBatchMatchesEachPromptAlone() {
        List<long[]> prompts = List.of(new long[] {464, 3290}, PROMPT, new long[] {42});
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            try (NDManager manager = TestModels.newManager()) {
                Generator generator = new Generator(TestModels.seeded(name, manager, 25));
                GenerationConfig greedy = GenerationConfig.builder().optMaxNewTokens(6).build();
                List<Integer> steps = new java.util.ArrayList<>();
                long[][] batched = generator.generate(manager, prompts, greedy, steps::add);
                for (int row = 0; row < prompts.size(); row++) {
                    assertArrayEquals(
                            generator.generate(manager, prompts.get(row), greedy),
                            batched[row],
                            name + " row " + row);
                }
                assertEquals(List.of(1, 2, 3, 4, 5, 6), steps);
            }
        }
    }

    @Test
    void samplingIsReproducibleBySeed() {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("gpt2-tiny", manager, 22);
            Generator generator = new Generator(model);
            GenerationConfig.Builder sampled =
                    GenerationConfig.builder().optMaxNewTokens(8).optTemperature(1.5f);
            long[] a = generator.generate(manager, PROMPT, sampled.optSeed(1).build());
            long[] b = generator.generate(manager, PROMPT, sampled.optSeed(1).build());
            long[] c = generator.generate(manager, PROMPT, sampled.optSeed(2).build());
            assertArrayEquals(a, b);
            assertFalse(Arrays.equals(a, c), "a 50,257-way draw repeated 8 times over");
            long[] topOne = generator.generate(manager, PROMPT, sampled.optTopK(1).build());
            assertArrayEquals(
                    generator.generate(
                            manager, PROMPT, GenerationConfig.builder().optMaxNewTokens(8).build()),
                    topOne);
        }
    }

    @Test
    void stopsAtAStopToken() {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM model = TestModels.seeded("llama-tiny", manager, 23);
            Generator generator = new Generator(model);
            long[] free =
                    generator.generate(
                            manager, PROMPT, GenerationConfig.builder().optMaxNewTokens(5).build());
            long[] stopped =
                    generator.generate(
                            manager,
                            PROMPT,
                            GenerationConfig.builder()
                                    .optMaxNewTokens(5)
                                    .optStopTokens(List.of(free[1]))
                                    .build());
            assertArrayEquals(Arrays.copyOf(free, 2), stopped);
        }
    }

    @Test
    void topKAndTopPRestrictTheCandidates() {
        float[] logits = {0f, 5f, 4f, 3f, -1f, 2.5f};
        Sampler topK =
                new Sampler(
                        GenerationConfig.builder().optTemperature(1).optTopK(3).optSeed(5).build());
        Set<Integer> drawn =
                IntStream.range(0, 300)
                        .map(i -> topK.next(logits))
                        .boxed()
                        .collect(Collectors.toSet());
        assertEquals(Set.of(1, 2, 3), drawn);
        // Softmax of {5, 4, 3, ...}: 0.60, 0.22, ...: top_p 0.7 keeps the first two.
        Sampler topP =
                new Sampler(
                        GenerationConfig.builder()
                                .optTemperature(1)
                                .optTopP(0.7f)
                                .optSeed(5)
                                .build());
        drawn =
                IntStream.range(0, 300)
                        .map(i -> topP.next(logits))
                        .boxed()
                        .collect(Collectors.toSet());
        assertEquals(Set.of(1, 2), drawn);
        Sampler nucleusOfOne =
                new Sampler(GenerationConfig.builder().optTemperature(1).optTopP(0.1f).build());
        assertEquals(1, nucleusOfOne.next(logits));
    }

    @Test
    void generateSubcommandPrintsTheContinuation() throws Exception {
        saveWithTokenizer(24);
        StringWriter out = new StringWriter();
        CommandLine command = new CommandLine(new GenerateCommand()).setOut(new PrintWriter(out));
        int exit =
                command.execute(
                        "--model",
                        dir.toString(),
                        "--prompt",
                        "Hello world",
                        "--max_new_tokens",
                        "4",
                        "--temperature",
                        "0.8",
                        "--top_p",
                        "0.9",
                        "--seed",
                        "3");
        assertEquals(0, exit);
        assertTrue(out.toString().startsWith("Hello world"), out.toString());
        assertTrue(out.toString().length() > "Hello world\n".length(), out.toString());
    }

    @Test
    void generateOnTwoRanksPrintsWhatOneProcessPrints() throws Exception {
        saveWithTokenizer(26);
        String[] args = {
            "--model", dir.toString(), "--prompt", "In the beginning", "--max_new_tokens", "6"
        };
        StringWriter out = new StringWriter();
        assertEquals(
                0,
                new CommandLine(new GenerateCommand()).setOut(new PrintWriter(out)).execute(args));
        try (RankProcesses job =
                RankProcesses.builder(ShardedGenerateMain.class)
                        .worldSize(2)
                        .args(args)
                        .timeout(Duration.ofMinutes(3))
                        .start()) {
            RankProcesses.Results results = job.await().assertAllSucceeded();
            String expected = out.toString().trim();
            assertTrue(expected.startsWith("In the beginning"), expected);
            assertTrue(results.rank(0).output().contains(expected), results.rank(0).output());
            assertFalse(results.rank(1).output().contains(expected), "only rank 0 prints");
        }
    }

    /**
     * Saves a seeded GPT-2 with GPT-2's tokenizer in {@link #dir} (skips without the tokenizer).
     */
    private void saveWithTokenizer(int seed) throws Exception {
        Path tokenizer = TestModels.sharedData("gpt2-tokenizer.json");
        try (NDManager manager = TestModels.newManager()) {
            HfCheckpoint.save(TestModels.seeded("gpt2-tiny", manager, seed), dir);
        }
        Files.copy(tokenizer, dir.resolve("tokenizer.json"));
    }
}
