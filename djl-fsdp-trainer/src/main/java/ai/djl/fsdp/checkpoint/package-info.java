/**
 * Checkpoints, the one home of reading and writing a model's state, sharded or full, unit by unit:
 * the whole training state saved and loaded by every rank at once ({@link
 * ai.djl.fsdp.checkpoint.Checkpointing}, staged in a directory renamed into place), each rank's
 * flat shards loaded from the model's arrays or read from a {@link
 * ai.djl.fsdp.checkpoint.ParameterSource} ({@link ai.djl.fsdp.checkpoint.ShardLoader}), and the
 * full state streamed one gathered unit at a time ({@link ai.djl.fsdp.checkpoint.ModelStateWriter})
 * through a {@link ai.djl.fsdp.checkpoint.StateTransform}, into which LoRA plugs merging or adapter
 * selection.
 */
package ai.djl.fsdp.checkpoint;
