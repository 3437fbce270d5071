/**
 * T5, T5 v1.1 and Flan-T5 ({@code model_type: t5}): the encoder-decoder {@link
 * ai.djl.fsdp.zoo.t5.T5ForConditionalGeneration} with Hugging Face's module and parameter names,
 * read from {@code config.json} by {@link ai.djl.fsdp.zoo.t5.T5Config}. Relative position buckets
 * (bidirectional in the encoder, causal in the decoder), the bias computed in each stack's first
 * block and shared with the rest, attention without the {@code 1 / sqrt(d)} scale, T5's RMS norm,
 * {@code relu} and {@code gated-gelu} feed-forward blocks, tied (scaled) and untied heads. {@link
 * ai.djl.fsdp.zoo.t5.T5Block} is the FSDP unit of both stacks. Its configuration is an {@link
 * ai.djl.fsdp.zoo.EncoderDecoderConfig}, what the seq2seq data and generation ({@code
 * ai.djl.fsdp.zoo.generate.GreedyDecoding}, with an {@link ai.djl.fsdp.zoo.EncoderDecoderCache})
 * read.
 */
package ai.djl.fsdp.zoo.t5;
