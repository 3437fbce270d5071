package ai.djl.fsdp.zoo.t5;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Greedy generation with a T5: the encoder runs once; the decoder starts from {@code
 * decoder_start_token_id} and is given one new token per step, its self-attention keys and values
 * of the earlier tokens and its keys and values of the encoder's output coming from an {@link
 * EncoderDecoderCache} (the latter projected at the first step only). Each row stops at its first
 * end-of-sequence token; the batch stops when every row has, or after the step limit.
 */
public final class GreedyDecoding {

    private GreedyDecoding() {}

    /**
     * Generates each row's target.
     *
     * @param model the model
     * @param ps the parameter store
     * @param inputIds the sources {@code [B, S]}, int64, padded on the right
     * @param attentionMask {@code [B, S]}, 1 for tokens and 0 for padding; or null for none
     * @param maxNewTokens the most tokens to generate per row
     * @return each row's generated tokens, the end-of-sequence token included where it came
     */
    public static List<long[]> generate(
            T5ForConditionalGeneration model,
            ParameterStore ps,
            NDArray inputIds,
            NDArray attentionMask,
            int maxNewTokens) {
        T5Config config = model.getConfig();
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
            NDArray encoded = model.encode(ps, inputIds, attentionMask, false);
            long[] tokens = new long[batch];
            Arrays.fill(tokens, config.decoderStartTokenId());
            for (int step = 0; step < maxNewTokens && !allTrue(done); step++) {
                // The step's arrays live in its own manager (the cache keeps what it needs).
                try (NDManager stepScope = scope.newSubManager()) {
                    NDArray next = stepScope.create(tokens).reshape(batch, 1);
                    NDArray logits = model.decode(ps, next, encoded, attentionMask, cache, false);
                    tokens =
                            logits.get(":, -1, :")
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

    private static boolean allTrue(boolean[] flags) {
        for (boolean flag : flags) {
            if (!flag) {
                return false;
            }
        }
        return true;
    }
}
