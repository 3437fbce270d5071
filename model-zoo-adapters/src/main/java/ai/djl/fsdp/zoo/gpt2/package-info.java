/**
 * GPT-2 as Hugging Face's {@code transformers} defines it, with the same module and parameter names
 * so that its checkpoints load unchanged: {@link ai.djl.fsdp.zoo.gpt2.GPT2LMHeadModel} (the head
 * tied to the token embedding), {@link ai.djl.fsdp.zoo.gpt2.GPT2Model}, the FSDP unit {@link
 * ai.djl.fsdp.zoo.gpt2.GPT2Block}, its attention and MLP, the input-major {@link
 * ai.djl.fsdp.zoo.gpt2.Conv1D} projection, and {@link ai.djl.fsdp.zoo.gpt2.GPT2Config}. Built on
 * {@code ai.djl.fsdp.zoo} and its {@code nn} layers.
 */
package ai.djl.fsdp.zoo.gpt2;
