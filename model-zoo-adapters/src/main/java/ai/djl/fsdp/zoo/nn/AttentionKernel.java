package ai.djl.fsdp.zoo.nn;

import ai.djl.nn.Block;
import java.util.Locale;

/**
 * How the model zoo's attention computes {@code softmax(q k^T / sqrt(D) + bias) v}.
 *
 * <ul>
 *   <li>{@link #EXPLICIT}: DJL operators, materializing the {@code [B, H, T, S]} scores and weights
 *       (and keeping them for backward).
 *   <li>{@link #SDPA}: libtorch's fused scaled-dot-product attention ({@link
 *       ai.djl.fsdp.tensor.op.FusedAttention}), which keeps only {@code O(T)} per head for
 *       backward. A plain causal mask becomes the kernel's own causal flag; a padding mask or a
 *       cache passes the additive bias to the kernel as its mask. Same results to float rounding.
 * </ul>
 *
 * Set on a built model with {@link #applyTo}, as Hugging Face's {@code attn_implementation}.
 */
public enum AttentionKernel {
    EXPLICIT,
    SDPA;

    /**
     * Returns the kernel of a command-line name.
     *
     * @param name {@code explicit} or {@code sdpa}, any case
     * @return the kernel
     * @throws IllegalArgumentException naming the accepted values
     */
    public static AttentionKernel of(String name) {
        for (AttentionKernel kernel : values()) {
            if (kernel.getName().equalsIgnoreCase(name)) {
                return kernel;
            }
        }
        throw new IllegalArgumentException(
                "attention kernel '" + name + "' is not one of explicit, sdpa");
    }

    /**
     * Returns the command-line name.
     *
     * @return {@code explicit} or {@code sdpa}
     */
    public String getName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Makes every attention block under {@code root} (itself included) use this kernel.
     *
     * @param root a model or any part of one
     * @return how many attention blocks were set
     */
    public int applyTo(Block root) {
        int count = 0;
        if (root instanceof SelfAttention) {
            ((SelfAttention) root).setKernel(this);
            count++;
        }
        for (Block child : root.getChildren().values()) {
            count += applyTo(child);
        }
        return count;
    }

    /** An attention block whose kernel can be chosen. */
    public interface SelfAttention {

        /**
         * Sets how the block computes attention from now on.
         *
         * @param kernel the kernel
         */
        void setKernel(AttentionKernel kernel);
    }
}
