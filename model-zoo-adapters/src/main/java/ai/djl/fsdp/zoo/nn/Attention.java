package ai.djl.fsdp.zoo.nn;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.FusedAttention;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

/**
 * The tensor arithmetic that GPT-2 and Llama attention share: head reshapes, masks, scaled
 * dot-product attention. Stateless functions, so the blocks that use them stay pure.
 */
public final class Attention {

    /**
     * The additive bias of a masked position: the most negative float, as Hugging Face uses, so a
     * row whose keys are all masked (a padding query) still has a finite softmax.
     */
    static final float MASKED = -Float.MAX_VALUE;

    private Attention() {}

    /**
     * Splits a fused projection {@code [B, T, 3 * H * D]} (queries, keys, values side by side) into
     * three {@code [B, H, T, D]} views: one reshape, one permutation and one split, where a split
     * and then {@link #splitHeads} on each of the three take seven operators (and as many backward
     * nodes). The views have the same offsets and strides either way.
     *
     * @param qkv the fused projections
     * @param heads the number of heads {@code H}
     * @return the queries, keys and values
     */
    public static NDList splitFusedHeads(NDArray qkv, long heads) {
        Shape s = qkv.getShape();
        return qkv.reshape(s.get(0), s.get(1), 3 * heads, s.get(2) / (3 * heads))
                .swapAxes(1, 2)
                .split(3, 1);
    }

    /**
     * Reshapes {@code [B, T, H * D]} to {@code [B, H, T, D]}.
     *
     * @param x the projections
     * @param heads the number of heads {@code H}
     * @return the per-head view
     */
    public static NDArray splitHeads(NDArray x, long heads) {
        Shape s = x.getShape();
        return x.reshape(s.get(0), s.get(1), heads, s.get(2) / heads).swapAxes(1, 2);
    }

    /**
     * Reshapes {@code [B, H, T, D]} back to {@code [B, T, H * D]}.
     *
     * @param x the per-head outputs
     * @return the concatenated heads
     */
    public static NDArray mergeHeads(NDArray x) {
        Shape s = x.getShape();
        return x.swapAxes(1, 2).reshape(s.get(0), s.get(2), s.get(1) * s.get(3));
    }

    /**
     * Computes {@code softmax(q k^T / sqrt(D) + bias) v}, with dropout on the attention weights in
     * training. Both kernels give the same outputs; a query that sees no key at all (a left-padding
     * position) gets different gradients from the two, so such positions must carry no loss.
     *
     * @param kernel how to compute it
     * @param q queries {@code [B, H, T, D]}
     * @param k keys {@code [B, H, S, D]}
     * @param v values {@code [B, H, S, D]}
     * @param bias the additive mask {@link #causalBias} made: {@code [B, 1, T, S]} with a padding
     *     or document mask, {@code [1, 1, T, S]} with a sliding window and no mask, or {@code [T,
     *     S]} without either (the plain causal mask when {@code T == S})
     * @param dropout the dropout probability on the weights
     * @param training whether this is a training pass
     * @return the outputs {@code [B, H, T, D]}
     */
    public static NDArray scaledDotProduct(
            AttentionKernel kernel,
            NDArray q,
            NDArray k,
            NDArray v,
            NDArray bias,
            float dropout,
            boolean training) {
        if (kernel == AttentionKernel.SDPA) {
            Shape b = bias.getShape();
            // Without a mask or a cache, the bias is exactly the causal mask: the kernel's own
            // flag lets it skip the blocks above the diagonal.
            boolean causal = b.dimension() == 2 && b.get(0) == b.get(1);
            double p = training ? dropout : 0;
            // Below float32 an additive mask would have to be cast to q's type (MASKED becomes
            // -inf); the boolean mask of the allowed keys says the same exactly.
            NDArray mask =
                    causal ? null : Precision.ofArray(q) == Precision.FLOAT32 ? bias : bias.eq(0);
            return FusedAttention.scaledDotProduct(q, k, v, mask, p, causal);
        }
        Shape qs = q.getShape();
        long batch = qs.get(0);
        long heads = qs.get(1);
        long length = qs.get(2);
        long depth = qs.get(3);
        long keys = k.getShape().get(2);
        long pairs = batch * heads;
        float scale = (float) (1 / Math.sqrt(depth));
        // Batched products over [B * H, T, D]: a four-dimensional matMul expands and reshapes
        // each operand and views its product inside libtorch, each step a backward node of its own.
        // Scores, mask and softmax in float32 (a bfloat16 MASKED would be -inf); the weights go
        // back to the values' type for the product.
        NDArray products =
                q.reshape(pairs, length, depth)
                        .batchMatMul(k.reshape(pairs, keys, depth).swapAxes(1, 2));
        NDArray scores = ScalarOps.mul(Precision.FLOAT32.cast(products), scale);
        // A [T, S] bias broadcasts over the pairs; a four-dimensional one over the heads (and the
        // batch when its own is 1).
        scores =
                bias.getShape().dimension() == 2
                        ? scores.add(bias)
                        : scores.reshape(batch, heads, length, keys)
                                .add(bias)
                                .reshape(pairs, length, keys);
        NDArray weights = Precision.castLike(scores.softmax(-1), v);
        return dropout(weights, dropout, training)
                .batchMatMul(v.reshape(pairs, keys, depth))
                .reshape(batch, heads, length, depth);
    }

    /**
     * Appends new keys or values to the cached ones of earlier positions.
     *
     * @param past the cached {@code [B, H, P, D]}
     * @param present the new {@code [B, H, T, D]}
     * @return {@code [B, H, P + T, D]}; the new ones themselves when nothing is cached yet (so the
     *     cache takes the compute type, bfloat16 under mixed precision, not the empty past's)
     */
    public static NDArray appendToPast(NDArray past, NDArray present) {
        if (past.getShape().get(2) == 0) {
            return present;
        }
        return past.concat(present, 2);
    }

    /**
     * Builds the additive attention bias for a causal decoder without a sliding window; see {@link
     * #causalBias(NDManager, NDArray, long, long, long, long)}.
     *
     * @param manager the manager of the result
     * @param attentionMask {@code [B, past + T]}, 0 for padding, else the token's document id; or
     *     null
     * @param batch the batch size {@code B}
     * @param past the number of cached positions
     * @param length the number of new positions {@code T}
     * @return the bias
     */
    public static NDArray causalBias(
            NDManager manager, NDArray attentionMask, long batch, long past, long length) {
        return causalBias(manager, attentionMask, batch, past, length, 0);
    }

    /**
     * Builds the additive attention bias for a causal decoder. The attention mask holds 0 for
     * padding and a positive document id for each token (1 everywhere for one document per row; 1,
     * 2, 3, ... for documents packed into one row): query {@code i} (at absolute position {@code
     * past + i}) sees key {@code j} if {@code j <= past + i}, key {@code j} is not padding, and
     * both belong to the same document (a padding query sees every earlier token, as without ids).
     * With a sliding window {@code W} it also needs {@code j > past + i - W}: the query sees its
     * own position and the {@code W - 1} before it, counted in the sequence (padding included), as
     * Hugging Face's sliding-window mask counts them.
     *
     * @param manager the manager of the result
     * @param attentionMask {@code [B, past + T]}, 0 for padding, else the token's document id; or
     *     null
     * @param batch the batch size {@code B}
     * @param past the number of cached positions
     * @param length the number of new positions {@code T}
     * @param window the sliding window, or 0 for none
     * @return the bias {@code [B, 1, T, past + T]}; without a mask the plain causal {@code [T, past
     *     + T]} (the scores broadcast it), or {@code [1, 1, T, past + T]} with a window: 0 where
     *     allowed, {@link #MASKED} elsewhere
     */
    public static NDArray causalBias(
            NDManager manager,
            NDArray attentionMask,
            long batch,
            long past,
            long length,
            long window) {
        NDArray allowed =
                attentionMask == null
                        ? causal(manager, past, length, window)
                        : allowed(manager, attentionMask, batch, past, length, window);
        if (attentionMask == null && window > 0) {
            // Only the plain causal mask may be two-dimensional: the fused kernel reads a square
            // [T, T] bias as its own causal flag.
            allowed = allowed.reshape(1, 1, length, past + length);
        }
        return ScalarOps.mul(allowed.logicalNot().toType(DataType.FLOAT32, false), MASKED);
    }

    /**
     * Returns the position ids of the new tokens: with a mask, each token's count of the earlier
     * tokens it attends to (so left-padded prompts start at 0, as Hugging Face's generation does,
     * and each packed document starts at 0, as position ids restart per document in padding-free
     * training); without one, {@code past, past + 1, ...}.
     *
     * @param manager the manager of the result
     * @param attentionMask {@code [B, past + T]} (see {@link #causalBias}) or null
     * @param batch the batch size
     * @param past the number of cached positions
     * @param length the number of new positions
     * @return int64 positions {@code [B, T]}
     */
    public static NDArray positionIds(
            NDManager manager, NDArray attentionMask, long batch, long past, long length) {
        if (attentionMask == null) {
            return manager.arange(past, past + length, 1, DataType.INT64)
                    .reshape(1, length)
                    .broadcast(batch, length);
        }
        NDArray seen = allowed(manager, attentionMask, batch, past, length, 0);
        return seen.toType(DataType.INT32, false)
                .sum(new int[] {1, 3})
                .toType(DataType.INT64, false)
                .sub(1)
                .maximum(0);
    }

    /**
     * Returns {@code [T, past + T]}: true where key {@code j <= past + i} (and {@code j > past + i
     * - window} with a window).
     */
    private static NDArray causal(NDManager manager, long past, long length, long window) {
        long keys = past + length;
        NDArray rows = manager.arange(past, keys, 1, DataType.INT64).reshape(length, 1);
        NDArray cols = manager.arange(0, keys, 1, DataType.INT64).reshape(1, keys);
        NDArray causal = cols.lte(rows);
        return window > 0 ? causal.logicalAnd(cols.gt(rows.sub(window))) : causal;
    }

    /** Returns {@code [B, 1, T, past + T]}: the keys each query sees (see {@link #causalBias}). */
    private static NDArray allowed(
            NDManager manager,
            NDArray attentionMask,
            long batch,
            long past,
            long length,
            long window) {
        long keys = past + length;
        checkMask(attentionMask, batch, keys);
        NDArray ids = attentionMask.toType(DataType.INT64, false);
        NDArray keyIds = ids.reshape(batch, 1, 1, keys);
        NDArray queryIds = ids.get(":, " + past + ":").reshape(batch, 1, length, 1);
        NDArray sameDocument = keyIds.eq(queryIds).logicalOr(queryIds.eq(0));
        return causal(manager, past, length, window)
                .reshape(1, 1, length, keys)
                .logicalAnd(keyIds.neq(0))
                .logicalAnd(sameDocument);
    }

    /**
     * Applies dropout in training.
     *
     * @param x the input
     * @param probability the drop probability
     * @param training whether this is a training pass
     * @return x, or x with dropout
     */
    public static NDArray dropout(NDArray x, float probability, boolean training) {
        if (!training || probability == 0) {
            return x;
        }
        return x.getNDArrayInternal().dropout(x, probability, true).singletonOrThrow();
    }

    private static void checkMask(NDArray attentionMask, long batch, long keys) {
        Shape expected = new Shape(batch, keys);
        if (!attentionMask.getShape().equals(expected)) {
            throw new IllegalArgumentException(
                    "attention mask must be [batch, cached + new tokens] = "
                            + expected
                            + ", got "
                            + attentionMask.getShape());
        }
    }

    /**
     * Returns the past keys and values carried at the end of a block's input list, or null.
     *
     * @param inputs the block's inputs
     * @param fixedInputs how many inputs come before the cache
     * @return {@code [pastK, pastV]}, or null when the block runs without a cache
     */
    public static NDList pastOf(NDList inputs, int fixedInputs) {
        if (inputs.size() == fixedInputs) {
            return null;
        }
        if (inputs.size() != fixedInputs + 2) {
            throw new IllegalArgumentException(
                    "expected "
                            + fixedInputs
                            + " inputs, or "
                            + (fixedInputs + 2)
                            + " with past keys and values; got "
                            + inputs.size());
        }
        return new NDList(inputs.get(fixedInputs), inputs.get(fixedInputs + 1));
    }
}
