/**
 * The zoo's registry and entry points: {@link ai.djl.fsdp.zoo.models.ModelFamilies} lists the
 * supported families, the one place a family is registered, and {@link
 * ai.djl.fsdp.zoo.models.Models} builds the tiny built-in architectures by name and loads models
 * from Hugging Face checkpoint directories of any listed family. It depends on every family
 * package, which is why it is a package of its own: nothing in the zoo's base package depends back
 * on it. Used by {@code finetune}, {@code generate} and the benchmarks.
 */
package ai.djl.fsdp.zoo.models;
