package ai.djl.fsdp.zoo.finetune.listener;

import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.finetune.report.MetricsLog;
import ai.djl.fsdp.zoo.finetune.report.Outcome;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import com.google.gson.JsonObject;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * The evaluation of {@code --eval_strategy}: the eval split's loss every {@code --eval_steps} steps
 * ({@code steps}) or at each epoch's end ({@code epoch}), and after the last step; the run also
 * evaluates once before training ({@link #evaluate}). Each evaluation is a collective (every rank's
 * listener runs it), a line on rank 0 ({@code eval step=.. eval_loss=.. eval_perplexity=..}), a row
 * of {@code metrics.jsonl}, the trainer's {@code validate_epoch_causal_lm_loss} metric and one of
 * the run's {@link Outcome}'s eval losses.
 */
public final class EvaluationListener extends TrainingListenerAdapter {

    private final String strategy;
    private final int everySteps;
    private final int totalSteps;
    private final ToDoubleFunction<FsdpTrainer> evalLoss;
    private final RunLog log;
    private final Outcome outcome;

    /**
     * Creates the evaluation.
     *
     * @param strategy {@code steps} or {@code epoch}
     * @param everySteps with {@code steps}, evaluate every this many steps
     * @param totalSteps the run's optimizer steps
     * @param evalLoss the eval split's mean loss per label (a collective)
     * @param log where the lines and rows go
     * @param outcome the run's figures
     */
    public EvaluationListener(
            String strategy,
            int everySteps,
            int totalSteps,
            ToDoubleFunction<FsdpTrainer> evalLoss,
            RunLog log,
            Outcome outcome) {
        this.strategy = strategy;
        this.everySteps = everySteps;
        this.totalSteps = totalSteps;
        this.evalLoss = evalLoss;
        this.log = log;
        this.outcome = outcome;
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        int step = StepMetrics.step(trainer);
        boolean due =
                "steps".equals(strategy)
                        ? everySteps > 0 && step % everySteps == 0
                        : "epoch".equals(strategy) && StepMetrics.endsEpoch(batchData);
        if (due || step == totalSteps) {
            evaluate((FsdpTrainer) trainer, step, StepMetrics.latest(trainer, StepMetrics.EPOCH));
        }
    }

    /**
     * Evaluates now (every rank together).
     *
     * @param trainer the trainer
     * @param step the optimizer steps taken
     * @param epoch the fractional epoch reached
     */
    public void evaluate(FsdpTrainer trainer, int step, double epoch) {
        double loss = evalLoss.applyAsDouble(trainer);
        outcome.recordEvalLoss(loss);
        trainer.getMetrics().addMetric(StepMetrics.evalLoss(trainer), loss);
        if (trainer.getRank() == 0) {
            JsonObject row = MetricsLog.row(step, epoch);
            MetricsLog.put(row, "eval_loss", loss);
            MetricsLog.put(row, "eval_perplexity", Math.exp(loss));
            log.write(row);
            log.print(
                    String.format(
                            Locale.ROOT,
                            "eval step=%d eval_loss=%.4f eval_perplexity=%.2f",
                            step,
                            loss,
                            Math.exp(loss)));
        }
    }
}
