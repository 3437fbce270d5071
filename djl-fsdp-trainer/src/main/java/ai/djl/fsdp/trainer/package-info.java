/**
 * Fully Sharded Data Parallel training as a DJL {@link ai.djl.training.Trainer}: the one package a
 * DJL program imports (with {@code ai.djl.fsdp.dist} to join the job). {@link
 * ai.djl.fsdp.trainer.FullyShardedDataParallel#newTrainer} returns an {@link
 * ai.djl.fsdp.trainer.FsdpTrainer} that {@code EasyTrain} and DJL's listeners use unchanged,
 * configured by an {@link ai.djl.fsdp.trainer.FsdpConfig} ({@link
 * ai.djl.fsdp.trainer.ShardingStrategy}, {@link ai.djl.fsdp.trainer.WrapPolicy}, {@link
 * ai.djl.fsdp.trainer.ActivationCheckpointing}, {@link ai.djl.fsdp.trainer.MixedPrecision}) and
 * {@link ai.djl.fsdp.trainer.TrainerOptions}; {@link ai.djl.fsdp.trainer.CheckpointListener} saves
 * sharded checkpoints from DJL's events. The trainer resolves the settings once ({@code
 * TrainingSetup}, and for the runtime {@code config.ExecutionOptions}) and hands the result down to
 * the sharding of the model ({@code ModelSharding}) and the training state of each step ({@code
 * ShardedTraining}); figures over all ranks live in {@link ai.djl.fsdp.trainer.metrics},
 * checkpoints in {@link ai.djl.fsdp.checkpoint}, the runtime of a step in {@link
 * ai.djl.fsdp.internal.runtime}. See {@code docs/fsdp.md}.
 */
package ai.djl.fsdp.trainer;
