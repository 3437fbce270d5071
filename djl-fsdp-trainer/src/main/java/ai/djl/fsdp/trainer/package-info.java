/**
 * Fully Sharded Data Parallel training as a DJL {@link ai.djl.training.Trainer}, the public API a
 * DJL program uses: {@link ai.djl.fsdp.trainer.FullyShardedDataParallel#newTrainer} returns an
 * {@link ai.djl.fsdp.trainer.FsdpTrainer} that {@code EasyTrain} and DJL's listeners use unchanged,
 * configured by an {@link ai.djl.fsdp.trainer.FsdpConfig} (with the types of {@link
 * ai.djl.fsdp.config}) and {@link ai.djl.fsdp.trainer.TrainerOptions}. The trainer resolves them
 * once ({@code TrainingSetup}) and hands the result down to the sharding of the model ({@code
 * ModelSharding}) and the training state of each step ({@code ShardedTraining}); figures over all
 * ranks live in {@link ai.djl.fsdp.trainer.metrics}, checkpoints in {@link ai.djl.fsdp.checkpoint},
 * the runtime of a step in {@link ai.djl.fsdp.runtime}. See {@code docs/fsdp.md}.
 */
package ai.djl.fsdp.trainer;
