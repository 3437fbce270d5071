/**
 * Blockwise symmetric quantization for communication (ZeRO++'s qwZ and qgZ): float values cut into
 * blocks of a fixed size, each block sent as signed integer codes of 8 or 4 bits (two 4-bit codes a
 * byte, {@link ai.djl.fsdp.tensor.quant.Nibbles}, the layout bitsandbytes' 4-bit weights share)
 * with one float32 scale, its largest magnitude over the largest code. Arrays in host memory are
 * quantized and restored in one pass in Java over their own memory, a chunk of blocks at a time;
 * others by libtorch's operators on their device, with the same results bit for bit.
 */
package ai.djl.fsdp.tensor.quant;
