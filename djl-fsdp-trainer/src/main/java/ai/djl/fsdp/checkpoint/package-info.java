/**
 * Checkpoints, the one home of reading and writing a model's state, sharded or full, unit by unit:
 * the whole training state saved and loaded by every rank at once ({@link
 * ai.djl.fsdp.checkpoint.Checkpointing}, staged in a directory renamed into place), each rank's
 * flat shards loaded from the model's arrays or read from a {@link
 * ai.djl.fsdp.checkpoint.ParameterSource} ({@link ai.djl.fsdp.checkpoint.ShardLoader}), and the
 * full state streamed one gathered unit at a time ({@link ai.djl.fsdp.checkpoint.ModelStateWriter})
 * through a {@link ai.djl.fsdp.checkpoint.StateTransform}, into which LoRA plugs merging or adapter
 * selection.
 *
 * <p>{@link ai.djl.fsdp.checkpoint.Checkpointing} is the trainer's internal, public only because
 * {@code ai.djl.fsdp.trainer} uses it from another package: a program saves and loads through
 * {@code FsdpTrainer.saveCheckpoint} and {@code loadCheckpoint}.
 */
package ai.djl.fsdp.checkpoint;
