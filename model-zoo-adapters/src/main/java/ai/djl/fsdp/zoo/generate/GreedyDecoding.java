package ai.djl.fsdp.zoo.generate;

import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.EncoderDecoderCache;
import ai.djl.fsdp.zoo.EncoderDecoderConfig;
import ai.djl.fsdp.zoo.PretrainedModel;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;

/**
 * Greedy generation with an encoder-decoder model (T5, see {@link EncoderDecoderConfig}), whole in
 * this process or sharded by an {@link FsdpTrainer}: the encoder runs once, at the first step; the
 * decoder starts from {@code decoder_start_token_id} and is given one new token per step, its
 * self-attention keys and values of the earlier tokens and its keys and values of the encoder's
 * output coming from an {@link EncoderDecoderCache} (the latter projected at the first step only).
 * Each row stops at its first end-of-sequence token; the batch stops when every row has (on every
 * rank, where the model is sharded: each step is a collective), or after the step limit.
 */
public final class GreedyDecoding {

    private GreedyDecoding() {}

    /**
     * Generates each row's target with a model held whole.
     *
     * @param model the model, an encoder-decoder one
     * @param ps the parameter store
     * @param inputIds the sources {@code [B, S]}, int64, padded on the right
     * @param attentionMask {@code [B, S]}, 1 for tokens and 0 for padding; or null for none
     * @param maxNewTokens the most tokens to generate per row
     * @return each row's generated tokens, the end-of-sequence token included where it came
     */
    public static List<long[]> generate(
            PretrainedModel model,
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            int maxNewTokens) {
        return generate(
                (EncoderDecoderConfig) model.getConfig(),
                (inputs, cache) -> model.forward(ps, inputs, false, cache.asParams()).head(),
                active -> active,
                inputIds,
                attentionMask,
                maxNewTokens);
    }

    /**
     * Generates each row of this rank's batch with a model sharded by a trainer: every rank calls
     * this with its own sources (at least one row), and each step gathers every unit once for all
     * of them. A collective: the ranks take the same number of steps, until no rank has a row left
     * to continue.
     *
     * @param trainer the trainer that holds the sharded model
     * @param config the model's configuration
     * @param inputIds this rank's sources {@code [B, S]}, int64, padded on the right
     * @param attentionMask {@code [B, S]}, or null for none
     * @param maxNewTokens the most tokens to generate per row, the same on every rank
     * @return each row's generated tokens, the end-of-sequence token included where it came
     */
    public static List<long[]> generate(
            FsdpTrainer trainer,
            EncoderDecoderConfig config,
            NDArray inputIds,
            NDArray attentionMask,
            int maxNewTokens) {
        return generate(
                config,
                (inputs, cache) -> trainer.evaluate(inputs, cache.asParams()).head(),
                active -> trainer.allReduce(active ? 1 : 0, ReduceOp.SUM) > 0,
                inputIds,
                attentionMask,
                maxNewTokens);
    }

    /** One step: the model on the sources and the new tokens, continuing the cache. */
    private interface Step {
        NDArray logits(NDList inputs, EncoderDecoderCache cache);
    }

    private static List<long[]> generate(
            EncoderDecoderConfig config,
            Step step,
            Predicate<Boolean> anyActive,
            NDArray inputIds,
            NDArray attentionMask,
            int maxNewTokens) {
        List<Long> eos = config.eosTokenIds();
        int batch = (int) inputIds.getShape().get(0);
        List<List<Long>> rows = new ArrayList<>();
        boolean[] done = new boolean[batch];
        for (int b = 0; b < batch; b++) {
            rows.add(new ArrayList<>());
        }
        try (NDManager scope = inputIds.getManager().newSubManager();
                EncoderDecoderCache cache =
                        new EncoderDecoderCache(scope, config.numDecoderLayers())) {
            long[] tokens = new long[batch];
            Arrays.fill(tokens, config.decoderStartTokenId());
            for (int n = 0; n < maxNewTokens && anyActive.test(!allTrue(done)); n++) {
                // The step's arrays live in its own manager (the cache keeps what it needs).
                try (NDManager stepScope = scope.newSubManager()) {
                    NDList inputs = new NDList(inputIds);
                    if (attentionMask != null) {
                        inputs.add(attentionMask);
                    }
                    inputs.add(stepScope.create(tokens).reshape(batch, 1));
                    tokens =
                            step.logits(inputs, cache)
                                    .get(":, -1, :")
                                    .argMax(-1)
                                    .toType(DataType.INT64, false)
                                    .toLongArray();
                    for (int b = 0; b < batch; b++) {
                        if (!done[b]) {
                            rows.get(b).add(tokens[b]);
                            done[b] = eos.contains(tokens[b]);
                        }
                    }
                }
            }
        }
        List<long[]> generated = new ArrayList<>();
        for (List<Long> row : rows) {
            generated.add(row.stream().mapToLong(Long::longValue).toArray());
        }
        return generated;
    }

    /**
     * Returns a generated target's text: its tokens up to, not including, the end-of-sequence
     * token, special tokens skipped, trimmed.
     *
     * @param tokenizer the model's tokenizer
     * @param ids the generated tokens, as {@link #generate} returns them
     * @param config the model's configuration
     * @return the text
     */
    public static String text(
            HuggingFaceTokenizer tokenizer, long[] ids, EncoderDecoderConfig config) {
        int length = ids.length;
        if (length > 0 && config.eosTokenIds().contains(ids[length - 1])) {
            length--;
        }
        return tokenizer.decode(Arrays.copyOf(ids, length), true).trim();
    }

    private static boolean allTrue(boolean[] flags) {
        for (boolean flag : flags) {
            if (!flag) {
                return false;
            }
        }
        return true;
    }
}
