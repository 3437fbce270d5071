/**
 * Fully Sharded Data Parallel training as a DJL {@link ai.djl.training.Trainer}: {@link
 * ai.djl.fsdp.trainer.FullyShardedDataParallel#newTrainer} returns an {@link
 * ai.djl.fsdp.trainer.FsdpTrainer} that {@code EasyTrain} and DJL's listeners use unchanged,
 * configured by an {@link ai.djl.fsdp.trainer.FsdpConfig}. See {@code docs/fsdp.md}.
 */
package ai.djl.fsdp.trainer;
