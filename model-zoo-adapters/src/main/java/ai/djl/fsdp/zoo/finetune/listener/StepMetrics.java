package ai.djl.fsdp.zoo.finetune.listener;

import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.metric.Metrics;
import ai.djl.training.Trainer;
import ai.djl.training.listener.EvaluatorTrainingListener;
import ai.djl.training.listener.TrainingListener.BatchData;

/**
 * The figures the {@code finetune} loop records in the trainer's DJL {@link Metrics} after each
 * optimizer step, before it raises {@code onTrainingBatch}; any listener reads them with {@code
 * trainer.getMetrics().latestMetric(name)}. The step's loss is the global one (every rank's share
 * of the step's token mean, summed over the ranks: the same on every rank) under the name DJL's
 * {@link EvaluatorTrainingListener} gives a batch's loss, {@code train_all_causal_lm_loss}; an
 * evaluation's loss goes under DJL's validation name, {@code validate_epoch_causal_lm_loss}.
 *
 * <p>The event's batch is this rank's part of the step's global batch: its data the micro-batches'
 * input ids, its labels their labels, its progress the step's place in the epoch ({@link
 * #endsEpoch}). The predictions are not kept (a fused loss head never makes the logits).
 */
public final class StepMetrics {

    /** The learning rate of the last update the optimizer applied. */
    public static final String LEARNING_RATE = "learning_rate";

    /** The fractional epoch the step reached. */
    public static final String EPOCH = "epoch";

    /** The step's tokens over all ranks (padding included). */
    public static final String TOKENS = "step_tokens";

    /** The step's wall time in seconds. */
    public static final String SECONDS = "step_seconds";

    private StepMetrics() {}

    /**
     * Returns the name of the step's global train loss.
     *
     * @param trainer the trainer
     * @return DJL's name of a batch's loss
     */
    public static String loss(Trainer trainer) {
        return EvaluatorTrainingListener.metricName(
                trainer.getLoss(), EvaluatorTrainingListener.TRAIN_ALL);
    }

    /**
     * Returns the name of an evaluation's loss on the eval split.
     *
     * @param trainer the trainer
     * @return DJL's name of the validation loss
     */
    public static String evalLoss(Trainer trainer) {
        return EvaluatorTrainingListener.metricName(
                trainer.getLoss(), EvaluatorTrainingListener.VALIDATE_EPOCH);
    }

    /**
     * Returns the latest value of a figure.
     *
     * @param trainer the trainer
     * @param name the figure's name
     * @return its value
     * @throws IllegalStateException if the loop recorded no such figure
     */
    public static double latest(Trainer trainer, String name) {
        Metrics metrics = trainer.getMetrics();
        if (metrics == null || !metrics.hasMetric(name)) {
            throw new IllegalStateException(
                    "The trainer's metrics hold no " + name + ": the finetune loop records it");
        }
        return metrics.latestMetric(name).getValue();
    }

    /**
     * Returns the optimizer steps the trainer has taken, the one just taken included.
     *
     * @param trainer the trainer, an {@link FsdpTrainer}
     * @return the step, from 1
     */
    public static int step(Trainer trainer) {
        return (int) ((FsdpTrainer) trainer).getTrainingState().getStep();
    }

    /**
     * Returns whether the step ended an epoch: its batch's progress is the epoch's last step.
     *
     * @param batchData the step's event
     * @return true at an epoch's end
     */
    public static boolean endsEpoch(BatchData batchData) {
        return batchData.getBatch().getProgress() == batchData.getBatch().getProgressTotal();
    }
}
