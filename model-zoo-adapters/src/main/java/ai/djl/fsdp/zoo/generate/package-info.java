/**
 * {@code bin/fsdp generate}: text from a checkpoint or a {@code finetune} output, alone or sharded
 * across ranks, with the KV cache, greedy or sampled decoding and the model's chat template.
 */
package ai.djl.fsdp.zoo.generate;
