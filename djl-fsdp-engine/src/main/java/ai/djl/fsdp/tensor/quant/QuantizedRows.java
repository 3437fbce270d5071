package ai.djl.fsdp.tensor.quant;

import ai.djl.ndarray.NDArray;

/**
 * Rows of values in quantized form, as they cross the wire: every row cut into the same number of
 * blocks (the last one padded with zeros), so row {@code r}'s codes and scales are the {@code r}-th
 * of equal pieces of {@link #codes} and {@link #scales} and an all-gather or all-to-all of rows is
 * one collective on each.
 *
 * @param codes the codes, 1-D, in {@link QuantizedBits#getCodeType()}
 * @param scales each block's scale, 1-D float32: the block's largest magnitude (a code {@code c}
 *     stands for {@code c / maxCode * scale}), 0 for a block of zeros
 */
public record QuantizedRows(NDArray codes, NDArray scales) implements AutoCloseable {

    /** Frees both arrays. */
    @Override
    public void close() {
        codes.close();
        scales.close();
    }
}
