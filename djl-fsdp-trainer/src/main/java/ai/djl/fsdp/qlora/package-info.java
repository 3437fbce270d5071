/**
 * A frozen 4-bit base for LoRA (QLoRA): {@link QuantizedLinear} holds a projection's weight in
 * bitsandbytes' packed form (codes two a byte, block scales, plain or quantized again) as frozen
 * parameters of their own types, and dequantizes it inside its forward, so under FSDP the packed
 * bytes are what is sharded and gathered and the dequantized weight lives only while its unit
 * computes; {@link Qlora#quantize} puts such layers in place of a model's linear projections. Their
 * values come from a float checkpoint quantized as it is read ({@link QuantizingSource}) or from a
 * pre-quantized one read as stored ({@link PrequantizedSource}); a trained model's merged output
 * decodes them into a plain float checkpoint ({@link MergedOutput}).
 */
package ai.djl.fsdp.qlora;
