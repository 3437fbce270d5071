package ai.djl.fsdp.zoo.t5;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;

/**
 * T5's relative position buckets: the distance from a query to a key ({@code key - query}) mapped
 * to one of {@code num_buckets} learned biases per head. Half the buckets (a quarter, each way, in
 * the bidirectional encoder) count small distances exactly; the rest grow logarithmically up to
 * {@code max_distance}, beyond which all distances share the last bucket. The causal decoder maps
 * every key after the query to bucket 0. The arithmetic is float32 step for step as Hugging Face's
 * tensors compute it, so that a distance at a bucket's edge falls where it falls there; computed in
 * Java, the buckets are the same on every CPU.
 */
final class RelativePositionBuckets {

    private RelativePositionBuckets() {}

    /**
     * Returns the bucket of a relative position.
     *
     * @param relative the key's position minus the query's
     * @param bidirectional true in the encoder, false in the causal decoder
     * @param buckets {@code relative_attention_num_buckets}
     * @param maxDistance {@code relative_attention_max_distance}
     * @return the bucket, in {@code [0, buckets)}
     */
    static int bucket(long relative, boolean bidirectional, int buckets, int maxDistance) {
        int offset = 0;
        int perSide = buckets;
        long distance;
        if (bidirectional) {
            perSide = buckets / 2;
            offset = relative > 0 ? perSide : 0;
            distance = Math.abs(relative);
        } else {
            distance = Math.max(-relative, 0);
        }
        int exact = perSide / 2;
        if (distance < exact) {
            return offset + (int) distance;
        }
        float ratio = (float) Math.log((float) distance / exact);
        float range = (float) Math.log((double) maxDistance / exact);
        long large = exact + (long) (ratio / range * (float) (perSide - exact));
        return offset + (int) Math.min(large, perSide - 1);
    }

    /**
     * Returns the buckets of queries at {@code past, past + 1, ...} against keys at {@code 0, 1,
     * ...}.
     *
     * @param manager the manager of the result
     * @param past the first query's position
     * @param queries the number of queries {@code T}
     * @param keys the number of keys {@code S}
     * @param bidirectional true in the encoder, false in the causal decoder
     * @param buckets {@code relative_attention_num_buckets}
     * @param maxDistance {@code relative_attention_max_distance}
     * @return int64 buckets {@code [T, S]}
     */
    static NDArray of(
            NDManager manager,
            long past,
            int queries,
            int keys,
            boolean bidirectional,
            int buckets,
            int maxDistance) {
        long[] table = new long[queries * keys];
        for (int i = 0; i < queries; i++) {
            for (int j = 0; j < keys; j++) {
                table[i * keys + j] = bucket(j - (past + i), bidirectional, buckets, maxDistance);
            }
        }
        return manager.create(table).reshape(queries, keys);
    }
}
