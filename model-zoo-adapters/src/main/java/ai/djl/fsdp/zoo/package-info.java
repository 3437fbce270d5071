/**
 * What every model of the zoo is, whatever its family: a decoder-only language model ({@link
 * ai.djl.fsdp.zoo.CausalLM}) around a decoder stack ({@link ai.djl.fsdp.zoo.DecoderModel}), with
 * Hugging Face's module and parameter names, its decoder layers the FSDP units; what an
 * encoder-decoder model's configuration adds ({@link ai.djl.fsdp.zoo.EncoderDecoderConfig}: its
 * special ids, its labels shifted right); the caches that generation passes through a model ({@link
 * ai.djl.fsdp.zoo.KvCache}, {@link ai.djl.fsdp.zoo.EncoderDecoderCache}); and what a family is
 * ({@link ai.djl.fsdp.zoo.ModelFamily}) and reads ({@link ai.djl.fsdp.zoo.ModelConfig}, its {@code
 * config.json}).
 *
 * <p>Built on the layers of {@code ai.djl.fsdp.zoo.nn}; the families ({@code gpt2}, {@code llama}
 * and those built on it) extend these types, {@code ai.djl.fsdp.zoo.models} registers and builds
 * them, and {@code finetune}, {@code generate} and the benchmarks use them.
 */
package ai.djl.fsdp.zoo;
