package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * libtorch's fused scaled-dot-product attention ({@code torch.nn.functional.
 * scaled_dot_product_attention}), with autograd. On the CPU libtorch picks its flash-attention
 * kernel ({@code _scaled_dot_product_flash_attention_for_cpu}), which never holds the {@code [B, H,
 * T, S]} weights: forward keeps only the output and a log-sum-exp per query for backward, and
 * backward recomputes the weights block by block. Where that kernel does not apply (dropout in
 * training, some masks) libtorch falls back to its own explicit ("math") path, still exact.
 *
 * <p>Autograd works because the call goes through the dispatcher ({@link DispatcherCall}): the
 * shim's direct {@code aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu} runs the kernel
 * but records no {@code grad_fn} (backward from its output fails with "does not require grad"), and
 * DJL has no custom autograd functions to pair it with its {@code _backward}; the dispatcher's
 * {@code aten::scaled_dot_product_attention} records the kernel's own backward.
 */
public final class FusedAttention {

    private static final String OPERATOR = "aten::scaled_dot_product_attention";

    private FusedAttention() {}

    /**
     * Computes {@code softmax(q k^T / sqrt(D) + mask) v}, with a causal mask when asked and dropout
     * on the weights when {@code dropout > 0}.
     *
     * @param q queries {@code [B, H, T, D]}
     * @param k keys {@code [B, H, S, D]}, as many heads as {@code q} (repeat grouped heads first)
     * @param v values {@code [B, H, S, D]}
     * @param mask an additive float mask broadcastable to {@code [B, H, T, S]} (or a boolean one,
     *     true where allowed); null for none
     * @param dropout the dropout probability on the weights; pass 0 outside training
     * @param causal whether query {@code i} sees only keys {@code j <= i} (top-left aligned, so
     *     meant for {@code T == S}); not combined with a mask
     * @return the outputs {@code [B, H, T, D]}, in the inputs' manager
     */
    public static NDArray scaledDotProduct(
            NDArray q, NDArray k, NDArray v, NDArray mask, double dropout, boolean causal) {
        if (causal && mask != null) {
            throw new IllegalArgumentException(
                    "fused attention takes a mask or causal=true, not both: fold the causal part"
                            + " into the mask");
        }
        if (!(q.getManager() instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "fused attention needs PyTorch-engine arrays, got "
                            + q.getManager().getClass().getName());
        }
        // (query, key, value, attn_mask?, dropout_p, is_causal, *, scale?, enable_gqa) -> Tensor
        return DispatcherCall.of(OPERATOR, 8)
                .tensor(q)
                .tensor(k)
                .tensor(v)
                .optionalTensor(mask)
                .floating(dropout)
                .bool(causal)
                .none()
                .bool(false)
                .call((PtNDManager) q.getManager(), 1)[0];
    }
}
