package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.KvCache;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * Autoregressive decoding with a key-value cache: the prompts are processed once, then each step
 * feeds only the newest token of each. Several prompts are decoded together as one batch, left
 * padded (the attention mask keeps a row's padding out of its attention and its position ids), so
 * each step runs the model once for all of them: under FSDP ({@link ShardedDecoder}) one gather of
 * each unit serves every prompt.
 *
 * <pre>{@code
 * long[] next = new Generator(model).generate(manager, promptIds,
 *         GenerationConfig.builder().optMaxNewTokens(20).optTemperature(0.8f).optTopP(0.95f).build());
 * }</pre>
 */
public final class Generator {

    private final Decoder decoder;

    /**
     * Creates a generator for an initialized model in this process.
     *
     * @param model the model
     */
    public Generator(CausalLM model) {
        this(Decoder.of(model));
    }

    /**
     * Creates a generator.
     *
     * @param decoder the model's forward
     */
    public Generator(Decoder decoder) {
        this.decoder = decoder;
    }

    /**
     * Generates tokens after a prompt.
     *
     * @param manager the manager for the cache and the work arrays (all freed before returning)
     * @param prompt the prompt's token ids, at least one
     * @param config how to pick tokens
     * @return the generated tokens (without the prompt), ending early after a stop token or when
     *     the model's positions run out
     */
    public long[] generate(NDManager manager, long[] prompt, GenerationConfig config) {
        return generate(manager, List.of(prompt), config, step -> {})[0];
    }

    /**
     * Generates tokens after each of several prompts, decoded together as one batch. Row {@code i}
     * samples with the seed {@code config.getSeed() + i}; greedy rows get what each prompt gets
     * alone.
     *
     * @param manager the manager for the cache and the work arrays (all freed before returning)
     * @param prompts the prompts' token ids, each at least one
     * @param config how to pick tokens
     * @param onStep told the number of steps taken after each step
     * @return each prompt's generated tokens (without the prompt), each ending after a stop token
     *     or when the budget or the model's positions (counted from the longest prompt) run out
     */
    public long[][] generate(
            NDManager manager, List<long[]> prompts, GenerationConfig config, IntConsumer onStep) {
        return decode(manager, prompts, config, 0, counting(onStep));
    }

    /**
     * Generates tokens after each of several prompts in batches of at most {@code maxRows} rows,
     * one batch after another, so that what a batch holds (the prompts' logits and the key-value
     * cache, both growing with rows times length) is bounded. Where the model is sharded the
     * processes agree on the number of batches ({@link Decoder#agreeOnBatches}); a process with
     * fewer decodes its first prompt again for each missing batch and drops the tokens. Each row
     * gets what it gets in one uncapped batch: row {@code i} samples with the seed {@code
     * config.getSeed() + i}.
     *
     * @param manager the manager for the cache and the work arrays (all freed before returning)
     * @param prompts the prompts' token ids, each at least one, at least one prompt
     * @param config how to pick tokens
     * @param maxRows the most rows a batch decodes together, at least one
     * @param onStep told the number of steps taken over all batches so far after each step
     * @return each prompt's generated tokens (without the prompt), as {@link #generate(NDManager,
     *     List, GenerationConfig, IntConsumer)} returns them
     */
    public long[][] generate(
            NDManager manager,
            List<long[]> prompts,
            GenerationConfig config,
            int maxRows,
            IntConsumer onStep) {
        if (maxRows < 1) {
            throw new IllegalArgumentException(
                    "a decoding batch needs at least one row, got " + maxRows);
        }
        if (prompts.isEmpty()) {
            throw new IllegalArgumentException("no prompts: generation needs at least one");
        }
        int batches = decoder.agreeOnBatches(batches(prompts.size(), maxRows));
        long[][] replies = new long[prompts.size()][];
        // Decoding steps of every batch so far, counted across batches.
        Runnable afterStep = counting(onStep);
        for (int batch = 0; batch < batches; batch++) {
            int from = Math.min(batch * maxRows, prompts.size());
            int to = Math.min(from + maxRows, prompts.size());
            // Past this process's own batches: its first prompt again, tokens dropped.
            List<long[]> rows = from < to ? prompts.subList(from, to) : prompts.subList(0, 1);
            long[][] decoded = decode(manager, rows, config, from, afterStep);
            System.arraycopy(decoded, 0, replies, from, to - from);
        }
        return replies;
    }

    /** Returns a step callback that tells {@code onStep} the number of steps taken so far. */
    private static Runnable counting(IntConsumer onStep) {
        AtomicInteger steps = new AtomicInteger();
        return () -> onStep.accept(steps.incrementAndGet());
    }

    /**
     * Returns the batches of at most {@code maxRows} rows that {@code rows} rows take.
     *
     * @param rows the rows
     * @param maxRows the most rows per batch
     * @return the batches
     */
    public static int batches(int rows, int maxRows) {
        return (rows + maxRows - 1) / maxRows;
    }

    private long[][] decode(
            NDManager manager,
            List<long[]> prompts,
            GenerationConfig config,
            int firstRow,
            Runnable afterStep) {
        int rows = prompts.size();
        if (rows == 0) {
            throw new IllegalArgumentException("no prompts: generation needs at least one");
        }
        int width = 0;
        for (long[] prompt : prompts) {
            if (prompt.length == 0) {
                throw new IllegalArgumentException(
                        "a prompt is empty: generation needs at least one token");
            }
            width = Math.max(width, prompt.length);
        }
        int positions = decoder.getConfig().maxPositions();
        if (width > positions) {
            throw new IllegalArgumentException(
                    "a prompt has "
                            + width
                            + " tokens, more than the model's "
                            + positions
                            + " positions");
        }
        int budget = decoder.agreeOnSteps(Math.min(config.getMaxNewTokens(), positions - width));
        Sampler[] samplers = new Sampler[rows];
        long[][] generated = new long[rows][budget];
        int[] counts = new int[rows];
        int[] pads = new int[rows];
        boolean[] done = new boolean[rows];
        // Left padding: every row's newest token is in the last column.
        long[] input = new long[rows * width];
        boolean padded = false;
        for (int row = 0; row < rows; row++) {
            long[] prompt = prompts.get(row);
            pads[row] = width - prompt.length;
            padded |= pads[row] > 0;
            System.arraycopy(prompt, 0, input, row * width + pads[row], prompt.length);
            samplers[row] = new Sampler(config, config.getSeed() + firstRow + row);
        }
        int steps = 0;
        boolean active = budget > 0;
        try (NDManager scope = manager.newSubManager();
                KvCache cache = new KvCache(scope, decoder.getConfig().numLayers())) {
            while (decoder.anyActive(active) && steps < budget) {
                long[] next;
                // Everything a step makes but the cache is freed with it.
                try (NDManager step = scope.newSubManager()) {
                    int length = input.length / rows;
                    NDArray ids = OwnedArrays.create(step, input, new Shape(rows, length));
                    NDArray mask = padded ? mask(step, pads, width + steps) : null;
                    NDArray last = decoder.forward(ids, mask, cache).get(":, -1, :");
                    next =
                            config.getTemperature() == 0
                                    ? last.argMax(1).toLongArray()
                                    : sample(last, samplers);
                }
                steps++;
                active = false;
                for (int row = 0; row < rows; row++) {
                    if (!done[row]) {
                        generated[row][counts[row]++] = next[row];
                        done[row] = config.getStopTokens().contains(next[row]);
                        active |= !done[row];
                    }
                }
                afterStep.run();
                // A finished row is fed its last token again; what follows it is not read.
                input = next;
            }
        }
        long[][] replies = new long[rows][];
        for (int row = 0; row < rows; row++) {
            replies[row] = Arrays.copyOf(generated[row], counts[row]);
        }
        return replies;
    }

    /** The attention mask {@code [rows, columns]}: each row's left padding 0, its tokens 1. */
    private static NDArray mask(NDManager manager, int[] pads, int columns) {
        long[] mask = new long[pads.length * columns];
        for (int row = 0; row < pads.length; row++) {
            Arrays.fill(mask, row * columns + pads[row], (row + 1) * columns, 1);
        }
        return manager.create(mask, new Shape(pads.length, columns));
    }

    /** Samples each row's next token from its logits {@code [rows, vocab]} on the host. */
    private static long[] sample(NDArray logits, Sampler[] samplers) {
        float[] all = Precision.FLOAT32.cast(logits).toFloatArray();
        int vocab = all.length / samplers.length;
        long[] next = new long[samplers.length];
        for (int row = 0; row < samplers.length; row++) {
            next[row] = samplers[row].next(Arrays.copyOfRange(all, row * vocab, (row + 1) * vocab));
        }
        return next;
    }
}
