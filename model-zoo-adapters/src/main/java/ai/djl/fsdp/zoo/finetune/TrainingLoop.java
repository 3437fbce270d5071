package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.NonFiniteGradientException;
import ai.djl.fsdp.zoo.finetune.args.CheckpointArguments;
import ai.djl.fsdp.zoo.finetune.data.DistributedSampler;
import ai.djl.fsdp.zoo.finetune.data.LabeledBatch;
import ai.djl.fsdp.zoo.finetune.listener.StepMetrics;
import ai.djl.metric.Metrics;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.GradientCollector;
import ai.djl.training.dataset.Batch;
import ai.djl.training.listener.TrainingListener.BatchData;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The optimizer steps of a {@code finetune} run and the DJL events they raise. Each step reads
 * {@code gradient_accumulation_steps} micro-batches from this rank's {@link DistributedSampler},
 * divides each one's summed token loss by the step's target tokens over all ranks ({@link
 * FsdpTrainer#countStepItems}), and runs forward, backward and {@link FsdpTrainer#step()} on each;
 * it then records the step's figures in the trainer's metrics ({@link StepMetrics}) and raises
 * {@code onTrainingBatch} once, and {@code onEpoch} after an epoch's last step. What a step leads
 * to (the log and {@code metrics.jsonl}, evaluation, checkpoints, the progress bar, the user's
 * {@code --listeners}) is done by the trainer's listeners. Every rank runs it.
 *
 * <p>It is not {@code EasyTrain.fit}: fit trains each batch of a DJL dataset on its own, its loss
 * the batch's mean, with an event per micro-batch. The recipe's loss is Hugging Face's global token
 * mean: a step's micro-batches are read before the first forward to count their target tokens over
 * all ranks, the step's loss is the sum of every rank's and micro-batch's share, and the sampler's
 * position goes into every checkpoint so that a resumed run reads the same batches.
 */
final class TrainingLoop {

    /** The most values of each figure the trainer's metrics keep. */
    private static final int FIGURES_KEPT = 1000;

    private final FinetuneRecipe recipe;
    private final FsdpTrainer trainer;
    private final ProcessGroup group;
    private final Consumer<String> print;
    private final DistributedSampler sampler;
    private int resumedSteps;

    TrainingLoop(FinetuneRecipe recipe, FsdpTrainer trainer, Consumer<String> print) {
        this.recipe = recipe;
        this.trainer = trainer;
        this.group = recipe.group;
        this.print = print;
        this.sampler = recipe.trainSampler();
        Metrics metrics = new Metrics();
        // A long run's figures stay bounded: DJL clears a figure's list when it reaches the limit.
        metrics.setLimit(FIGURES_KEPT);
        trainer.setMetrics(metrics);
    }

    /** Trains for the recipe's steps, from the one after the step it resumed after. */
    void run() {
        int perStep = recipe.args.gradientAccumulationSteps;
        for (int step = resumedSteps + 1; step <= recipe.totalSteps; step++) {
            if (!sampler.hasNext()) {
                sampler.nextEpoch();
            }
            try (NDManager stepManager = trainer.getManager().newSubManager()) {
                NDList inputs = new NDList();
                NDList labels = new NDList();
                long begin = System.nanoTime();
                float loss = train(step, stepManager, inputs, labels);
                double elapsed = (System.nanoTime() - begin) / 1e9;
                recordPosition();
                recordFigures(loss, inputs, elapsed);
                Batch batch =
                        new Batch(
                                stepManager,
                                inputs,
                                labels,
                                perStep * recipe.args.perDeviceTrainBatchSize,
                                null,
                                null,
                                (sampler.getBatchesRead() + perStep - 1) / perStep,
                                recipe.stepsPerEpoch);
                BatchData event = new BatchData(batch, Map.of(), Map.of());
                trainer.notifyListeners(listener -> listener.onTrainingBatch(trainer, event));
                if (StepMetrics.endsEpoch(event)) {
                    trainer.notifyListeners(listener -> listener.onEpoch(trainer));
                }
            }
        }
    }

    /** Records the step's figures in the trainer's metrics, for the listeners. */
    private void recordFigures(float loss, NDList inputs, double elapsed) {
        Metrics metrics = trainer.getMetrics();
        // As doubles: DJL's metric reads a Float back through its decimal string.
        metrics.addMetric(StepMetrics.loss(trainer), (double) loss);
        metrics.addMetric(StepMetrics.LEARNING_RATE, (double) appliedRate());
        metrics.addMetric(
                StepMetrics.EPOCH,
                sampler.getEpoch()
                        + sampler.getBatchesRead() / (double) sampler.getBatchesPerEpoch());
        metrics.addMetric(
                StepMetrics.TOKENS,
                inputs.stream().mapToLong(NDArray::size).sum() * group.getSize());
        metrics.addMetric(StepMetrics.SECONDS, elapsed);
    }

    /**
     * Trains one optimizer step; keeps its micro-batches' input ids and labels in {@code inputs}
     * and {@code labels}, owned by {@code stepManager}.
     *
     * @return the step's loss: the sum over the micro-batches and ranks of their shares
     */
    private float train(int step, NDManager stepManager, NDList inputs, NDList labels) {
        float loss = 0;
        List<NDManager> managers = new ArrayList<>();
        try {
            // The step's batches are read first: the loss is divided by their target tokens over
            // all ranks (Hugging Face's global token mean).
            List<LabeledBatch> batches = new ArrayList<>();
            long targets = 0;
            // An epoch's last step may take fewer: the batches it has left.
            int micros =
                    Math.min(
                            recipe.args.gradientAccumulationSteps,
                            sampler.getBatchesPerEpoch() - sampler.getBatchesRead());
            for (int micro = 0; micro < micros; micro++) {
                NDManager manager = trainer.getManager().newSubManager();
                managers.add(manager);
                int[] indices = sampler.next();
                batches.add(recipe.train.batch(manager, indices));
                targets += recipe.train.countLabels(indices);
            }
            recipe.loss.setStepTokens(trainer.countStepItems(targets, batches.size()));
            for (int micro = 0; micro < batches.size(); micro++) {
                LabeledBatch batch = batches.get(micro);
                try (NDManager manager = managers.get(micro);
                        GradientCollector collector = trainer.newGradientCollector()) {
                    // Logits, or hidden states and the head's weight (CausalLM.setFusedLossHead).
                    NDList predictions = trainer.forward(batch.modelInputs());
                    NDArray value = recipe.loss.evaluate(new NDList(batch.labels()), predictions);
                    collector.backward(value);
                    // Each micro-batch's share of the step's mean, on every rank.
                    loss += sumOverRanks(value);
                    NDArray inputIds = batch.modelInputs().get(0);
                    inputs.add(inputIds);
                    labels.add(batch.labels());
                    inputIds.attach(stepManager);
                    batch.labels().attach(stepManager);
                }
                step(step, loss);
            }
        } finally {
            managers.forEach(NDManager::close);
        }
        return loss;
    }

    /**
     * Puts the sampler's position in the trainer's state, where every checkpoint saves it and
     * {@link #resume} finds it.
     */
    private void recordPosition() {
        TrainingState state = trainer.getTrainingState();
        state.setEpoch(sampler.getEpoch());
        state.getExtras()
                .put(CheckpointArguments.SAMPLER_EPOCH, Integer.toString(sampler.getEpoch()));
        state.getExtras()
                .put(
                        CheckpointArguments.SAMPLER_BATCHES,
                        Integer.toString(sampler.getBatchesRead()));
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
