package ai.djl.fsdp.zoo.finetune.listener;

import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.finetune.report.Progress;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import java.util.Locale;

/**
 * Rank 0's progress bar over the run's steps ({@link Progress}), moved at every step with the
 * step's loss, learning rate and tokens per second; closed after the last step.
 */
public final class ProgressListener extends TrainingListenerAdapter {

    private final int totalSteps;
    private Progress progress;

    /**
     * Creates the listener.
     *
     * @param totalSteps the run's optimizer steps
     */
    public ProgressListener(int totalSteps) {
        this.totalSteps = totalSteps;
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        if (progress == null) {
            progress = Progress.open(totalSteps, ((FsdpTrainer) trainer).getRank() == 0);
        }
        int step = StepMetrics.step(trainer);
        progress.update(
                step,
                String.format(
                        Locale.ROOT,
                        "loss %.4f lr %.2e %.0f tok/s",
                        StepMetrics.latest(trainer, StepMetrics.loss(trainer)),
                        StepMetrics.latest(trainer, StepMetrics.LEARNING_RATE),
                        StepMetrics.latest(trainer, StepMetrics.TOKENS)
                                / StepMetrics.latest(trainer, StepMetrics.SECONDS)));
        if (step == totalSteps) {
            onTrainingEnd(trainer);
        }
    }

    @Override
    public void onTrainingEnd(Trainer trainer) {
        if (progress != null) {
            progress.close();
            progress = null;
        }
    }
}
