/**
 * bitsandbytes' blockwise 4-bit quantization, bit for bit: the NF4 and FP4 codes ({@link
 * QuantType}), a weight's packed codes and per-block scales ({@link QuantizedWeight}), the scales
 * quantized again to 8 bits ({@link NestedScales}, bitsandbytes' double quantization over its
 * signed dynamic map, {@link DynamicMap}), and the kernels that make and undo them ({@link
 * BlockQuantizer}). Pure arithmetic on Java arrays: no tensors, no I/O.
 *
 * <p>The definition followed is that of bitsandbytes' CUDA kernels, where published QLoRA
 * checkpoints are quantized: a block's scale is its largest magnitude, each value is multiplied by
 * the scale's float32 reciprocal and coded by the kernel's thresholds (a value equal to a threshold
 * takes the lower code), two codes a byte with the first value in the high nibble. See docs/lora.md
 * for the few places where bitsandbytes' own backends disagree with one another.
 */
package ai.djl.fsdp.quant;
