package ai.djl.fsdp.trainer;

import ai.djl.Model;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.RankDevice;
import ai.djl.training.TrainingConfig;

/**
 * The entry point of FSDP training: an existing DJL program replaces {@code
 * model.newTrainer(config)} by {@link #newTrainer} and keeps everything else.
 */
public final class FullyShardedDataParallel {

    private FullyShardedDataParallel() {}

    /**
     * Returns a trainer for {@code model} that shards it over {@code group}'s ranks.
     *
     * @param model the model, on this rank's device
     * @param trainingConfig the DJL training configuration (loss, optimizer, listeners, one device)
     * @param group the ranks that train together
     * @param fsdpConfig how to shard
     * @return the trainer
     */
    public static FsdpTrainer newTrainer(
            Model model, TrainingConfig trainingConfig, ProcessGroup group, FsdpConfig fsdpConfig) {
        return newTrainer(model, trainingConfig, group, fsdpConfig, TrainerOptions.defaults());
    }

    /**
     * Returns a trainer for {@code model} that shards it over {@code group}'s ranks and steps as
     * {@code options} say (gradient accumulation, clipping, logging, initial values).
     *
     * @param model the model, on this rank's device
     * @param trainingConfig the DJL training configuration (loss, optimizer, listeners, one device)
     * @param group the ranks that train together
     * @param fsdpConfig how to shard
     * @param options how the trainer steps and starts
     * @return the trainer
     */
    public static FsdpTrainer newTrainer(
            Model model,
            TrainingConfig trainingConfig,
            ProcessGroup group,
            FsdpConfig fsdpConfig,
            TrainerOptions options) {
        RankScopedTrainingConfig rankConfig =
                new RankScopedTrainingConfig(
                        trainingConfig,
                        group.getRank() == 0 || options.isLogAllRanks(),
                        group.getRank() == 0,
                        RankDevice.forTraining(trainingConfig.getDevices(), group.getDevice()));
        return new FsdpTrainer(model, rankConfig, group, fsdpConfig, options);
    }
}
