package ai.djl.fsdp.zoo.generate;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Checks of generation under FSDP that every rank runs, on one rank in-process or on several as
 * separate processes ({@link #main}): a rank's prompts of different lengths decoded together as one
 * left-padded batch with the key-value cache give, token for token, the greedy continuation each
 * prompt gets alone without a cache (the whole sequence run again for every token, as the
 * exact-match evaluation did before), stop tokens included; the ranks' batches differ in size and
 * width.
 */
final class ShardedGenerationChecks {

    private static final int SEED = 21;
    private static final int NEW_TOKENS = 7;
    private static final int[] PROMPT_LENGTHS = {4, 9, 1, 6, 9, 3, 5};

    private ShardedGenerationChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args none
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            runAll(group);
        }
        System.out.println("checks passed");
    }

    /** Runs every check for both architectures. */
    static void runAll(ProcessGroup group) {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            batchedWithCacheMatchesEachPromptAloneWithout(name, MixedPrecision.FP32, group);
        }
        cappedBatchesMatchOneBatch("llama-tiny", group);
        // Under bfloat16 the cache keeps the compute type; the outputs are not compared.
        batchedDecodingRuns("llama-tiny", MixedPrecision.BF16, group);
    }

    private static void batchedWithCacheMatchesEachPromptAloneWithout(
            String name, MixedPrecision precision, ProcessGroup group) {
        List<long[]> all = prompts();
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, precision, group)) {
                // Every rank runs every prompt alone (the same number of passes on every rank).
                List<long[]> alone = new ArrayList<>();
                for (long[] prompt : all) {
                    alone.add(aloneWithoutCache(trainer, manager, prompt, NEW_TOKENS));
                }
                // A stop token that ends one of this rank's rows early (its second token).
                long stop = alone.get(group.getRank())[1];
                List<long[]> mine = new ArrayList<>();
                List<long[]> expected = new ArrayList<>();
                for (int i = group.getRank(); i < all.size(); i += group.getSize()) {
                    mine.add(all.get(i));
                    expected.add(upToStop(alone.get(i), stop));
                }
                GenerationConfig config =
                        GenerationConfig.builder()
                                .optMaxNewTokens(NEW_TOKENS)
                                .optStopTokens(List.of(stop))
                                .build();
                List<Integer> steps = new ArrayList<>();
                long[][] batched =
                        new Generator(new ShardedDecoder(trainer, lm.getConfig(), group))
                                .generate(manager, mine, config, steps::add);
                for (int row = 0; row < mine.size(); row++) {
                    if (!Arrays.equals(expected.get(row), batched[row])) {
                        throw new AssertionError(
                                name
                                        + " rank "
                                        + group.getRank()
                                        + " row "
                                        + row
                                        + ": batched with the cache "
                                        + Arrays.toString(batched[row])
                                        + ", alone without "
                                        + Arrays.toString(expected.get(row)));
                    }
                }
                if (steps.isEmpty() || steps.get(steps.size() - 1) > NEW_TOKENS) {
                    throw new AssertionError(name + " took " + steps + " steps");
                }
            }
        }
    }

    /**
     * The rank's prompts decoded in batches of at most 1, 2 or 3 rows give what one batch gives; on
     * two ranks the shares are 4 and 3 prompts, so the ranks have different numbers of batches (2
     * and 1 at 3 rows) and agree on the most.
     */
    private static void cappedBatchesMatchOneBatch(String name, ProcessGroup group) {
        List<long[]> all = prompts();
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, MixedPrecision.FP32, group)) {
                Generator generator =
                        new Generator(new ShardedDecoder(trainer, lm.getConfig(), group));
                List<long[]> mine = new ArrayList<>();
                for (int i = group.getRank(); i < all.size(); i += group.getSize()) {
                    mine.add(all.get(i));
                }
                GenerationConfig free =
                        GenerationConfig.builder().optMaxNewTokens(NEW_TOKENS).build();
                long[][] whole = generator.generate(manager, mine, free, step -> {});
                // A stop token that ends one of this rank's rows early (its third token).
                long stop = whole[0][2];
                GenerationConfig config =
                        GenerationConfig.builder()
                                .optMaxNewTokens(NEW_TOKENS)
                                .optStopTokens(List.of(stop))
                                .build();
                long[][] one = generator.generate(manager, mine, config, step -> {});
                for (int maxRows = 1; maxRows <= 3; maxRows++) {
                    List<Integer> steps = new ArrayList<>();
                    long[][] capped =
                            generator.generate(manager, mine, config, maxRows, steps::add);
                    for (int row = 0; row < mine.size(); row++) {
                        if (!Arrays.equals(one[row], capped[row])) {
                            throw new AssertionError(
                                    name
                                            + " rank "
                                            + group.getRank()
                                            + " row "
                                            + row
                                            + " in batches of "
                                            + maxRows
                                            + ": "
                                            + Arrays.toString(capped[row])
                                            + ", in one batch "
                                            + Arrays.toString(one[row]));
                        }
                    }
                    for (int i = 1; i < steps.size(); i++) {
                        if (steps.get(i) <= steps.get(i - 1)) {
                            throw new AssertionError("steps reported out of order: " + steps);
                        }
                    }
                }
            }
        }
    }

    private static void batchedDecodingRuns(
            String name, MixedPrecision precision, ProcessGroup group) {
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            model.setBlock(lm);
            try (FsdpTrainer trainer = newTrainer(model, precision, group)) {
                List<long[]> mine = new ArrayList<>();
                List<long[]> all = prompts();
                for (int i = group.getRank(); i < all.size(); i += group.getSize()) {
                    mine.add(all.get(i));
                }
                GenerationConfig config =
                        GenerationConfig.builder().optMaxNewTokens(NEW_TOKENS).build();
                long[][] batched =
                        new Generator(new ShardedDecoder(trainer, lm.getConfig(), group))
                                .generate(manager, mine, config, step -> {});
                for (long[] row : batched) {
                    if (row.length != NEW_TOKENS
                            || Arrays.stream(row)
                                    .anyMatch(t -> t < 0 || t >= lm.getConfig().vocabSize())) {
                        throw new AssertionError(
                                name + " " + precision + " generated " + Arrays.toString(row));
                    }
                }
            }
        }
    }

    /** Greedy tokens after {@code prompt}, each from the whole sequence run again. */
    static long[] aloneWithoutCache(
            FsdpTrainer trainer, NDManager manager, long[] prompt, int newTokens) {
        long[] sequence = prompt;
        for (int i = 0; i < newTokens; i++) {
            try (NDManager scope = manager.newSubManager()) {
                NDArray ids = scope.create(sequence).reshape(1, sequence.length);
                NDArray logits = trainer.evaluate(new NDList(ids)).head();
                long next = logits.get(0, sequence.length - 1).argMax().getLong();
                sequence = Arrays.copyOf(sequence, sequence.length + 1);
                sequence[sequence.length - 1] = next;
            }
        }
        return Arrays.copyOfRange(sequence, prompt.length, sequence.length);
    }

    private static long[] upToStop(long[] tokens, long stop) {
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] == stop) {
                return Arrays.copyOf(tokens, i + 1);
            }
        }
        return tokens;
    }

    private static List<long[]> prompts() {
        Random random = new Random(SEED);
        List<long[]> prompts = new ArrayList<>();
        for (int length : PROMPT_LENGTHS) {
            prompts.add(random.longs(length, 0, 50257).toArray());
        }
        return prompts;
    }

    private static FsdpTrainer newTrainer(
            Model model, MixedPrecision precision, ProcessGroup group) {
        FsdpConfig fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(ShardingStrategy.FULL_SHARD)
                        .optMixedPrecision(precision)
                        .optWrapPolicy(TestModels.decoderLayers((CausalLM) model.getBlock()))
                        .build();
        return FullyShardedDataParallel.newTrainer(model, TestModels.trainingConfig(), group, fsdp);
    }
}
