/**
 * The dense Qwen3 models: Qwen2's keys with RMS norms over each head's queries and keys before the
 * rotation, projection biases only where {@code attention_bias} asks, and a {@code head_dim} of its
 * own. {@link ai.djl.fsdp.zoo.qwen3.Qwen3Config} extends Qwen2's, and {@link
 * ai.djl.fsdp.zoo.qwen3.Qwen3ForCausalLM} and {@link ai.djl.fsdp.zoo.qwen3.Qwen3DecoderLayer} (the
 * FSDP unit) subclass {@code ai.djl.fsdp.zoo.llama}'s.
 */
package ai.djl.fsdp.zoo.qwen3;
