/**
 * Mistral: Llama's model and names with attention limited to a {@code sliding_window} of positions.
 * {@link ai.djl.fsdp.zoo.mistral.MistralConfig} reads the window, and {@link
 * ai.djl.fsdp.zoo.mistral.MistralForCausalLM} and {@link
 * ai.djl.fsdp.zoo.mistral.MistralDecoderLayer} (the FSDP unit under Hugging Face's name) subclass
 * {@code ai.djl.fsdp.zoo.llama}'s.
 */
package ai.djl.fsdp.zoo.mistral;
