package ai.djl.fsdp.zoo.finetune.listener;

import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.finetune.report.MetricsLog;
import ai.djl.fsdp.zoo.finetune.report.Outcome;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import com.google.gson.JsonObject;
import java.util.Locale;

/**
 * The step log of {@code --logging_strategy} and {@code --logging_steps}: at each logged step a
 * line on rank 0 ({@code step=.. epoch=.. loss=.. lr=.. grad_norm=.. tokens_per_s=..}) and a row of
 * {@code metrics.jsonl}, the loss the mean of the steps' losses since the last logged one, the
 * throughput that of the steps this process ran. Every step is recorded in the run's {@link
 * Outcome}, logged or not.
 */
public final class StepLogger extends TrainingListenerAdapter {

    private final String strategy;
    private final int everySteps;
    private final int totalSteps;
    private final RunLog log;
    private final Outcome outcome;
    private double lossSum;
    private int lossCount;

    /**
     * Creates the log.
     *
     * @param strategy {@code steps}, {@code epoch} or {@code no}
     * @param everySteps with {@code steps}, log every this many steps (also the first and the last)
     * @param totalSteps the run's optimizer steps
     * @param log where the lines and rows go
     * @param outcome the run's figures, recorded at every step
     */
    public StepLogger(
            String strategy, int everySteps, int totalSteps, RunLog log, Outcome outcome) {
        this.strategy = strategy;
        this.everySteps = everySteps;
        this.totalSteps = totalSteps;
        this.log = log;
        this.outcome = outcome;
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        int step = StepMetrics.step(trainer);
        double loss = StepMetrics.latest(trainer, StepMetrics.loss(trainer));
        outcome.recordStep(
                loss,
                (long) StepMetrics.latest(trainer, StepMetrics.TOKENS),
                StepMetrics.latest(trainer, StepMetrics.SECONDS));
        lossSum += loss;
        lossCount++;
        if (logs(step, StepMetrics.endsEpoch(batchData))) {
            log((FsdpTrainer) trainer, step, lossSum / lossCount);
            lossSum = 0;
            lossCount = 0;
        }
    }

    private boolean logs(int step, boolean epochEnd) {
        switch (strategy) {
            case "no":
                return false;
            case "epoch":
                return epochEnd || step == totalSteps;
            default:
                return step == 1
                        || step == totalSteps
                        || (everySteps > 0 && step % everySteps == 0);
        }
    }

    private void log(FsdpTrainer trainer, int step, double loss) {
        // The norm of the last optimizer step; left out when the trainer did not measure it.
        double norm = trainer.getLastGradNorm().orElse(Double.NaN);
        if (trainer.getRank() != 0) {
            return;
        }
        double epoch = StepMetrics.latest(trainer, StepMetrics.EPOCH);
        double rate = StepMetrics.latest(trainer, StepMetrics.LEARNING_RATE);
        double tokensPerSecond = outcome.getTokensPerSecond();
        JsonObject row = MetricsLog.row(step, epoch);
        MetricsLog.put(row, "loss", loss);
        MetricsLog.put(row, "learning_rate", rate);
        MetricsLog.put(row, "grad_norm", norm);
        MetricsLog.put(row, "tokens_per_s", tokensPerSecond);
        log.write(row);
        log.print(
                String.format(
                        Locale.ROOT,
                        "step=%d epoch=%.2f loss=%.4f lr=%.3e%s tokens_per_s=%.0f",
                        step,
                        epoch,
                        loss,
                        rate,
                        Double.isFinite(norm)
                                ? String.format(Locale.ROOT, " grad_norm=%.3f", norm)
                                : "",
                        tokensPerSecond));
    }
}
