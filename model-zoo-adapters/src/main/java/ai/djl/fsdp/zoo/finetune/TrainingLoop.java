package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.NonFiniteGradientException;
import ai.djl.fsdp.zoo.finetune.args.CheckpointArguments;
import ai.djl.fsdp.zoo.finetune.args.FinetuneArguments;
import ai.djl.fsdp.zoo.finetune.data.DistributedSampler;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.fsdp.zoo.finetune.report.MetricsLog;
import ai.djl.fsdp.zoo.finetune.report.Outcome;
import ai.djl.fsdp.zoo.finetune.report.Progress;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * The training loop: each optimizer step reads {@code gradient_accumulation_steps} micro-batches
 * from this rank's {@link DistributedSampler}, logs every {@code logging_steps} steps (a line on
 * rank 0, a row of {@code metrics.jsonl}), evaluates as {@code eval_strategy} says, and moves rank
 * 0's progress bar. Every rank runs it; only rank 0 prints and writes.
 */
final class TrainingLoop {

    private final FinetuneRecipe recipe;
    private final FsdpTrainer trainer;
    private final ProcessGroup group;
    private MetricsLog metrics;
    private final CheckpointArguments checkpoints;
    private final Consumer<String> print;
    private final Evaluation evaluation;
    private final Outcome outcome = new Outcome();
    private final DistributedSampler sampler;
    private int resumedSteps;

    TrainingLoop(
            FinetuneRecipe recipe,
            FsdpTrainer trainer,
            CheckpointArguments checkpoints,
            Consumer<String> print) {
        this.recipe = recipe;
        this.trainer = trainer;
        this.group = recipe.group;
        this.checkpoints = checkpoints;
        this.print = print;
        this.evaluation = new Evaluation(trainer, group);
        this.sampler = recipe.trainSampler();
    }

    /** Returns the evaluation, for the exact-match checks around the run. */
    Evaluation getEvaluation() {
        return evaluation;
    }

    /**
     * Trains for the recipe's steps.
     *
     * @param metrics where rank 0 logs the steps and evaluations
     * @return the run's figures
     */
    Outcome run(MetricsLog metrics) throws IOException {
        this.metrics = metrics;
        FinetuneArguments args = recipe.args;
        boolean rankZero = group.getRank() == 0;
        long tokens = 0;
        double seconds = 0;
        double lossSum = 0;
        int lossCount = 0;
        int first = resumedSteps + 1;
        if (first == 1) {
            evaluate(0, 0);
        }
        try (Progress progress = Progress.open(recipe.totalSteps, rankZero)) {
            for (int step = first; step <= recipe.totalSteps; step++) {
                if (sampler.getBatchesPerEpoch() - sampler.getBatchesRead()
                        < args.gradientAccumulationSteps) {
                    sampler.nextEpoch();
                }
                long begin = System.nanoTime();
                float loss = 0;
                long stepTokens = 0;
                List<NDManager> managers = new ArrayList<>();
                try {
                    // The step's batches are read first: the loss is divided by their target
                    // tokens over all ranks (Hugging Face's global token mean).
                    List<NDList> batches = new ArrayList<>();
                    long targets = 0;
                    for (int micro = 0; micro < args.gradientAccumulationSteps; micro++) {
                        NDManager manager = trainer.getManager().newSubManager();
                        managers.add(manager);
                        int[] indices = sampler.next();
                        NDList batch = recipe.train.batch(manager, indices, recipe.padId);
                        targets += recipe.train.countLabels(indices);
                        batches.add(batch);
                    }
                    recipe.loss.setStepTokens(trainer.countStepItems(targets));
                    for (int micro = 0; micro < batches.size(); micro++) {
                        NDList batch = batches.get(micro);
                        try (NDManager manager = managers.get(micro);
                                GradientCollector collector = trainer.newGradientCollector()) {
                            // Hidden states and the head's weight (CausalLM.setFusedLossHead).
                            NDList predictions = trainer.forward(Sequences.modelInputs(batch));
                            NDArray value =
                                    recipe.loss.evaluate(new NDList(batch.get(1)), predictions);
                            collector.backward(value);
                            // Each micro-batch's share of the step's mean, on every rank.
                            loss += sumOverRanks(value);
                            stepTokens += batch.get(0).size() * group.getSize();
                        }
                        step(step, loss);
                    }
                } finally {
                    managers.forEach(NDManager::close);
                }
                double elapsed = (System.nanoTime() - begin) / 1e9;
                tokens += stepTokens;
                seconds += elapsed;
                lossSum += loss;
                lossCount++;
                double epoch =
                        sampler.getEpoch()
                                + sampler.getBatchesRead() / (double) sampler.getBatchesPerEpoch();
                float rate = appliedRate();
                progress.update(
                        step,
                        String.format(
                                Locale.ROOT,
                                "loss %.4f lr %.2e %.0f tok/s",
                                loss,
                                rate,
                                stepTokens / elapsed));
                boolean epochEnd =
                        sampler.getBatchesPerEpoch() - sampler.getBatchesRead()
                                < args.gradientAccumulationSteps;
                if (logs(step, epochEnd)) {
                    log(step, epoch, lossSum / lossCount, rate, tokens / seconds);
                    lossSum = 0;
                    lossCount = 0;
                }
                outcome.recordLoss(loss);
                boolean evaluated = false;
                if ("steps".equals(args.evalStrategy) && args.evalSteps > 0) {
                    evaluated = step % args.evalSteps == 0;
                } else if ("epoch".equals(args.evalStrategy)) {
                    evaluated = epochEnd;
                }
                if (evaluated || step == recipe.totalSteps) {
                    evaluate(step, epoch);
                }
                if (checkpoints.savesAfter(step, epochEnd)) {
                    saveCheckpoint(step);
                }
            }
        }
        outcome.finish(recipe.totalSteps, tokens / Math.max(seconds, 1e-9));
        return outcome;
    }

    /**
     * Loads the checkpoint the run resumes from (--resume_from_checkpoint), if any: the model, the
     * optimizer, the schedule's and the sampler's positions; {@link #run} goes on from there.
     *
     * @param directory the checkpoint ({@link CheckpointArguments#resumeDirectory}), or null
     * @return the checkpoint's directory, or null for a new run
     * @throws IOException if the checkpoint cannot be read or does not fit
     */
    Path resume(Path directory) throws IOException {
        if (directory == null) {
            return null;
        }
        trainer.loadCheckpoint(directory);
        TrainingState state = trainer.getTrainingState();
        String epoch = state.getExtras().get(CheckpointArguments.SAMPLER_EPOCH);
        String batches = state.getExtras().get(CheckpointArguments.SAMPLER_BATCHES);
        if (epoch == null || batches == null) {
            throw new IllegalArgumentException(
                    "--resume_from_checkpoint "
                            + directory
                            + " records no data position (it was not saved by bin/fsdp"
                            + " finetune); resume from a checkpoint-<step> of a finetune run");
        }
        try {
            sampler.seek(Integer.parseInt(epoch), Integer.parseInt(batches));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "--resume_from_checkpoint "
                            + directory
                            + ": its data position (epoch "
                            + epoch
                            + ", batch "
                            + batches
                            + ") does not fit this run's data and"
                            + " --per_device_train_batch_size; resume with the dataset, batch size"
                            + " and number of ranks that saved it",
                    e);
        }
        resumedSteps = (int) state.getStep();
        print.accept(
                "resumed from "
                        + directory
                        + " after step "
                        + resumedSteps
                        + " (epoch "
                        + state.getEpoch()
                        + ")");
        return directory;
    }

    /** Returns the step the run resumed after (0 for a new run). */
    int getResumedSteps() {
        return resumedSteps;
    }

    /**
     * Saves {@code output_dir/checkpoint-<step>}, with the sampler's position; rotates old ones.
     */
    private void saveCheckpoint(int step) throws IOException {
        TrainingState state = trainer.getTrainingState();
        state.setEpoch(sampler.getEpoch());
        state.getExtras()
                .put(CheckpointArguments.SAMPLER_EPOCH, Integer.toString(sampler.getEpoch()));
        state.getExtras()
                .put(
                        CheckpointArguments.SAMPLER_BATCHES,
                        Integer.toString(sampler.getBatchesRead()));
        Path outputDir = recipe.args.outputDir;
        Path directory = CheckpointDirectory.of(outputDir, step);
        trainer.saveCheckpoint(directory);
        if (group.getRank() == 0 && checkpoints.saveTotalLimit != null) {
            CheckpointDirectory.keepNewest(outputDir, checkpoints.saveTotalLimit, directory);
        }
    }

    /**
     * Takes a micro-batch's trainer step; a run of non-finite steps ends the job in the flags'
     * terms. The trainer's decision rests on the global gradient norm, the same on every rank.
     */
    private void step(int step, float loss) {
        try {
            trainer.step();
        } catch (NonFiniteGradientException e) {
            throw NonFiniteStop.of(step, loss, e, recipe.args);
        }
    }

    /**
     * Returns the learning rate of the last update the optimizer applied: a step it skipped (a
     * float16 overflow) does not advance its update count, which the schedule follows.
     */
    private float appliedRate() {
        int updates = trainer.getTrainingState().getUpdateCounts().getOrDefault("", 0);
        return recipe.schedule.getNewValue(updates);
    }

    private boolean logs(int step, boolean epochEnd) {
        FinetuneArguments args = recipe.args;
        switch (args.loggingStrategy) {
            case "no":
                return false;
            case "epoch":
                return epochEnd || step == recipe.totalSteps;
            default:
                return step == 1
                        || step == recipe.totalSteps
                        || (args.loggingSteps > 0 && step % args.loggingSteps == 0);
        }
    }

    private void log(int step, double epoch, double loss, float rate, double tokensPerSecond) {
        // The norm of the last optimizer step; left out when the trainer did not measure it.
        double norm = trainer.getLastGradNorm().orElse(Double.NaN);
        if (group.getRank() != 0) {
            return;
        }
        JsonObject row = MetricsLog.row(step, epoch);
        MetricsLog.put(row, "loss", loss);
        MetricsLog.put(row, "learning_rate", rate);
        MetricsLog.put(row, "grad_norm", norm);
        MetricsLog.put(row, "tokens_per_s", tokensPerSecond);
        metrics.write(row);
        print.accept(
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

    private void evaluate(int step, double epoch) {
        if (recipe.eval == null || "no".equals(recipe.args.evalStrategy)) {
            return;
        }
        double loss =
                evaluation.loss(recipe.eval, recipe.args.perDeviceEvalBatchSize, recipe.padId);
        outcome.recordEvalLoss(loss);
        if (group.getRank() == 0) {
            JsonObject row = MetricsLog.row(step, epoch);
            MetricsLog.put(row, "eval_loss", loss);
            MetricsLog.put(row, "eval_perplexity", Math.exp(loss));
            metrics.write(row);
            print.accept(
                    String.format(
                            Locale.ROOT,
                            "eval step=%d eval_loss=%.4f eval_perplexity=%.2f",
                            step,
                            loss,
                            Math.exp(loss)));
        }
    }

    /**
     * Every rank's loss is its share of the step's global token mean: the logged loss is the sum of
     * the ranks' shares.
     */
    private float sumOverRanks(NDArray loss) {
        NDArray copy = loss.stopGradient().reshape(1);
        group.allReduce(copy, ReduceOp.SUM);
        return copy.getFloat();
    }
}
