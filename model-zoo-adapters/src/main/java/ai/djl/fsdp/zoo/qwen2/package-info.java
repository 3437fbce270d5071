/**
 * Qwen2 and Qwen2.5: Llama's model and names with biases on the query, key and value projections.
 * {@link ai.djl.fsdp.zoo.qwen2.Qwen2Config} reads Hugging Face's keys (and refuses the sliding
 * window the shipped models leave off), and {@link ai.djl.fsdp.zoo.qwen2.Qwen2ForCausalLM} and
 * {@link ai.djl.fsdp.zoo.qwen2.Qwen2DecoderLayer} (the FSDP unit) subclass {@code
 * ai.djl.fsdp.zoo.llama}'s. Qwen3 builds on its configuration.
 */
package ai.djl.fsdp.zoo.qwen2;
