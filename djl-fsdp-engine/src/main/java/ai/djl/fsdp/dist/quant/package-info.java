/**
 * Collectives that send quantized values (ZeRO++'s qwZ and qgZ) over any {@link
 * ai.djl.fsdp.dist.ProcessGroup}: an all-gather of blockwise int8 codes and scales that each rank
 * restores in its output's type, and a reduce-scatter that quantizes each rank's input once,
 * exchanges the pieces all-to-all and sums them in float32 on the rank that owns each, so the
 * rounding never compounds from hop to hop.
 */
package ai.djl.fsdp.dist.quant;
