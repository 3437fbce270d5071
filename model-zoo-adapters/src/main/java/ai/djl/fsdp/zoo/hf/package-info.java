/**
 * A model's Hugging Face files: {@code config.json} read and written by {@link
 * ai.djl.fsdp.zoo.hf.ConfigJson} into a family's configuration (the keys all families share in
 * {@link ai.djl.fsdp.zoo.hf.PretrainedConfig}; a 4-bit base's {@code quantization_config} in {@link
 * ai.djl.fsdp.zoo.hf.QuantizationConfig}), the weights of a model held whole loaded strictly and
 * saved by {@link ai.djl.fsdp.zoo.hf.HfCheckpoint}, a checkpoint read shard by shard under FSDP
 * through {@link ai.djl.fsdp.zoo.hf.CheckpointShardSource} (a {@code ParameterSource}), and
 * tokenizers loaded through DJL by {@link ai.djl.fsdp.zoo.hf.Tokenizers}. Builds on the trainer
 * module's safetensors, state-dict and checkpoint packages, never on the trainer itself: saving a
 * model the FSDP trainer holds is {@code ai.djl.fsdp.zoo.sharded.ShardedSave}'s. The families'
 * configurations, {@code models}, {@code sharded}, {@code finetune} and {@code generate} use it.
 */
package ai.djl.fsdp.zoo.hf;
