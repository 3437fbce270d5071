/**
 * Llama as Hugging Face's {@code transformers} defines it, with its module and parameter names:
 * {@link ai.djl.fsdp.zoo.llama.LlamaForCausalLM}, {@link ai.djl.fsdp.zoo.llama.LlamaModel}, the
 * FSDP unit {@link ai.djl.fsdp.zoo.llama.LlamaDecoderLayer}, grouped-query attention with rotary
 * embeddings ({@link ai.djl.fsdp.zoo.llama.LlamaAttention}, {@link
 * ai.djl.fsdp.zoo.llama.RopeScaling}), the SwiGLU MLP, RMSNorm and {@link
 * ai.djl.fsdp.zoo.llama.LlamaConfig}.
 *
 * <p>The block carries the variations of the families built on it (biases on the query, key and
 * value projections, norms on the queries and keys, a sliding window), which {@code mistral},
 * {@code qwen2} and {@code qwen3} switch on from their configurations.
 */
package ai.djl.fsdp.zoo.llama;
