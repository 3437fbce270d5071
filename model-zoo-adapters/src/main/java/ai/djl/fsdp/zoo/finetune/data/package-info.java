/**
 * The data of {@code finetune}: text, JSON-lines and conversation datasets (the built-in arithmetic
 * chat among them), the project's byte-level tokenizer, sequences cut, packed and labelled for the
 * causal loss, and each rank's sampler.
 */
package ai.djl.fsdp.zoo.finetune.data;
