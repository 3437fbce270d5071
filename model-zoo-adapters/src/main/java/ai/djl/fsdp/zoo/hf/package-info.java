/**
 * A model's Hugging Face files: {@code config.json} read and written by {@link
 * ai.djl.fsdp.zoo.hf.ConfigJson} into a family's configuration (the keys all families share in
 * {@link ai.djl.fsdp.zoo.hf.PretrainedConfig}), the weights loaded strictly and saved (whole,
 * merged with LoRA adapters, or the adapters alone) by {@link ai.djl.fsdp.zoo.hf.HfCheckpoint}, a
 * checkpoint read shard by shard under FSDP through {@link
 * ai.djl.fsdp.zoo.hf.CheckpointShardSource}, and tokenizers loaded through DJL by {@link
 * ai.djl.fsdp.zoo.hf.Tokenizers}. Builds on the trainer module (its safetensors, state-dict, LoRA
 * and checkpoint packages, and the FSDP trainer whose sharded state it saves); the families'
 * configurations, {@code models}, {@code finetune} and {@code generate} use it.
 */
package ai.djl.fsdp.zoo.hf;
