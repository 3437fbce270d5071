/**
 * Reading and writing a model's state, sharded or full, unit by unit: each rank's flat shards
 * loaded from the model's arrays or read from a {@link ai.djl.fsdp.checkpoint.ParameterSource}
 * ({@link ai.djl.fsdp.checkpoint.ShardLoader}), and the full state streamed one gathered unit at a
 * time ({@link ai.djl.fsdp.checkpoint.ModelStateWriter}) through a {@link
 * ai.djl.fsdp.checkpoint.StateTransform}, into which LoRA plugs merging or adapter selection.
 */
package ai.djl.fsdp.checkpoint;
