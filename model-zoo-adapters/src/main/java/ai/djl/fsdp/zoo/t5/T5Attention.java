package ai.djl.fsdp.zoo.t5;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.nn.Attention;
import ai.djl.fsdp.zoo.nn.Embedding;
import ai.djl.fsdp.zoo.nn.HfBlock;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * T5's attention, self or over the encoder's output: {@code softmax(q k^T + bias) v} without the
 * {@code 1 / sqrt(d)} scale (T5 folds it into the weights' initialization), {@code num_heads} heads
 * of {@code d_kv} each, no biases on the projections {@code q}, {@code k}, {@code v}, {@code o}.
 * The first block of each stack has {@code relative_attention_bias}, one learned bias per relative
 * position bucket and head: it adds that bias to the mask it is given and returns the sum, the
 * position bias every later block of the stack is given in its place.
 *
 * <p>Self-attention: inputs {@code (x [B, T, C], bias [, pastK, pastV])}, outputs {@code (y,
 * positionBias [, keys, values])}; the queries sit at positions {@code past, past + 1, ...}.
 * Cross-attention: inputs {@code (x, encoderStates [B, S, C], bias [, crossK, crossV])}, outputs
 * {@code (y [, crossK, crossV])}: the encoder's keys and values are projected when the given ones
 * are empty and used as given afterwards, once per generated sequence.
 */
public final class T5Attention extends HfBlock {

    private static final String RELATIVE = "relative_attention_bias";

    private final boolean cross;
    private final boolean relative;
    private final boolean bidirectional;
    private final int heads;
    private final int buckets;
    private final int maxDistance;
    private final float dropout;

    T5Attention(T5Config config, boolean cross, boolean relative, boolean bidirectional) {
        int width = config.hiddenSize();
        long inner = (long) config.numHeads() * config.headDim();
        float factor = config.initializerFactor();
        // Hugging Face's _init_weights: the queries' scale carries the missing 1 / sqrt(d_kv).
        addChild(
                "q", new Linear(width, inner, false, std(factor, (long) width * config.headDim())));
        addChild("k", new Linear(width, inner, false, std(factor, width)));
        addChild("v", new Linear(width, inner, false, std(factor, width)));
        addChild("o", new Linear(inner, width, false, std(factor, inner)));
        if (relative) {
            addChild(
                    RELATIVE,
                    new Embedding(
                            config.relativeAttentionNumBuckets(),
                            config.numHeads(),
                            std(factor, width)));
        }
        this.cross = cross;
        this.relative = relative;
        this.bidirectional = bidirectional;
        heads = config.numHeads();
        buckets = config.relativeAttentionNumBuckets();
        maxDistance = config.relativeAttentionMaxDistance();
        dropout = config.dropoutRate();
    }

    /** {@code factor / sqrt(fanIn)}, as Hugging Face initializes T5's weights. */
    static float std(float factor, long fanIn) {
        return (float) (factor / Math.sqrt(fanIn));
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore ps, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray x = inputs.get(0);
        NDArray q = Attention.splitHeads(call("q", ps, x, training), heads);
        if (cross) {
            NDArray encoder = inputs.get(1);
            NDList past = Attention.pastOf(inputs, 3);
            NDArray k;
            NDArray v;
            if (past != null && past.get(0).getShape().get(2) > 0) {
                k = past.get(0);
                v = past.get(1);
            } else {
                k = Attention.splitHeads(call("k", ps, encoder, training), heads);
                v = Attention.splitHeads(call("v", ps, encoder, training), heads);
            }
            NDArray y = attend(ps, q, k, v, inputs.get(2), training);
            return past == null ? new NDList(y) : new NDList(y, k, v);
        }
        NDList past = Attention.pastOf(inputs, 2);
        NDArray k = Attention.splitHeads(call("k", ps, x, training), heads);
        NDArray v = Attention.splitHeads(call("v", ps, x, training), heads);
        long cached = 0;
        if (past != null) {
            cached = past.get(0).getShape().get(2);
            k = Attention.appendToPast(past.get(0), k);
            v = Attention.appendToPast(past.get(1), v);
        }
        NDArray bias = inputs.get(1);
        if (relative) {
            bias = relativeBias(ps, x, cached, (int) k.getShape().get(2), training).add(bias);
        }
        NDArray y = attend(ps, q, k, v, bias, training);
        return past == null ? new NDList(y, bias) : new NDList(y, bias, k, v);
    }

    /** Returns {@code [1, H, T, S]}: each head's learned bias of each query-key distance. */
    private NDArray relativeBias(
            ParameterStore ps, NDArray x, long cached, int keys, boolean training) {
        int queries = (int) x.getShape().get(1);
        NDArray table =
                RelativePositionBuckets.of(
                        x.getManager(), cached, queries, keys, bidirectional, buckets, maxDistance);
        // [T, S, H] -> [1, H, T, S], in float32 as the scores it is added to.
        NDArray values = Precision.FLOAT32.cast(call(RELATIVE, ps, table, training));
        return values.transpose(2, 0, 1).expandDims(0);
    }

    /** Computes {@code o(softmax(q k^T + bias) v)}, the scores and softmax in float32. */
    private NDArray attend(
            ParameterStore ps, NDArray q, NDArray k, NDArray v, NDArray bias, boolean training) {
        NDArray scores = Precision.FLOAT32.cast(q.matMul(k.swapAxes(2, 3))).add(bias);
        NDArray weights = Precision.castLike(scores.softmax(-1), v);
        NDArray y = Attention.dropout(weights, dropout, training).matMul(v);
        return call("o", ps, Attention.mergeHeads(y), training);
    }
}
