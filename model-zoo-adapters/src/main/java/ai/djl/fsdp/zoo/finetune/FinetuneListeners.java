package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.finetune.args.CheckpointArguments;
import ai.djl.fsdp.zoo.finetune.listener.EvaluationListener;
import ai.djl.fsdp.zoo.finetune.listener.ProgressListener;
import ai.djl.fsdp.zoo.finetune.listener.RunLog;
import ai.djl.fsdp.zoo.finetune.listener.StepLogger;
import ai.djl.fsdp.zoo.finetune.report.Outcome;
import ai.djl.training.listener.TrainingListener;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The listeners a {@code finetune} run attaches to its trainer, in the order they hear each step:
 * the progress bar, the step log (which records the run's {@link Outcome}), the evaluation (unless
 * there is no eval split or {@code --eval_strategy no}), the trainer's checkpoint listener (unless
 * {@code --save_strategy no}), then the user's {@code --listeners}.
 */
final class FinetuneListeners {

    private final RunLog log;
    private final Outcome outcome;
    private final EvaluationListener evaluation;
    private final List<TrainingListener> listeners = new ArrayList<>();

    /**
     * Builds the run's listeners.
     *
     * @param recipe the run
     * @param checkpoints the checkpoint flags
     * @param users the user's listeners
     * @param print prints a line on rank 0
     */
    FinetuneListeners(
            FinetuneRecipe recipe,
            CheckpointArguments checkpoints,
            List<TrainingListener> users,
            Consumer<String> print) {
        log = new RunLog(print);
        outcome = new Outcome(recipe.totalSteps);
        listeners.add(new ProgressListener(recipe.totalSteps));
        listeners.add(
                new StepLogger(
                        recipe.args.loggingStrategy,
                        recipe.args.loggingSteps,
                        recipe.totalSteps,
                        log,
                        outcome));
        if (recipe.eval != null && !"no".equals(recipe.args.evalStrategy)) {
            evaluation =
                    new EvaluationListener(
                            recipe.args.evalStrategy,
                            recipe.args.evalSteps,
                            recipe.totalSteps,
                            trainer ->
                                    new Evaluation(trainer, recipe.group)
                                            .loss(recipe.eval, recipe.args.perDeviceEvalBatchSize),
                            log,
                            outcome);
            listeners.add(evaluation);
        } else {
            evaluation = null;
        }
        checkpoints.newListener(recipe.args.outputDir).ifPresent(listeners::add);
        listeners.addAll(users);
    }

    /** Returns the listeners, in order. */
    List<TrainingListener> all() {
        return listeners;
    }

    /** Returns where the recipe's listeners print and write their rows. */
    RunLog getLog() {
        return log;
    }

    /** Returns the run's figures, recorded as it goes. */
    Outcome getOutcome() {
        return outcome;
    }

    /**
     * Evaluates before the first step (a collective), as the run does when it starts fresh.
     *
     * @param trainer the trainer
     */
    void evaluateBeforeTraining(FsdpTrainer trainer) {
        if (evaluation != null) {
            evaluation.evaluate(trainer, 0, 0);
        }
    }
}
