/**
 * {@code bin/fsdp generate}: text from a checkpoint or a {@code finetune} output, alone or sharded
 * across ranks, with the KV cache, greedy or sampled decoding and the model's chat template; for an
 * encoder-decoder model (T5) its target for a source, greedy, the encoder run once and the decoder
 * with an {@code EncoderDecoderCache} ({@link ai.djl.fsdp.zoo.generate.GreedyDecoding}).
 */
package ai.djl.fsdp.zoo.generate;
