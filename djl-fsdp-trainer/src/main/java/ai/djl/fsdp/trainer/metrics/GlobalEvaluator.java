package ai.djl.fsdp.trainer.metrics;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.evaluator.Evaluator;

/**
 * One of the user's evaluators as an {@link ai.djl.fsdp.trainer.FsdpTrainer} hands it to DJL's
 * listeners: its accumulators are updated with the global batch (every rank's labels and
 * predictions, see {@link GlobalBatch}), so what they accumulate, and so {@code
 * getTrainingResult()}, the logged figures and what saving listeners record, is what DJL's trainer
 * accumulates on one process over the global batch, on every rank. {@link #evaluate} stays this
 * rank's: it is what a loss is computed with.
 */
public final class GlobalEvaluator extends Evaluator {

    private final Evaluator evaluator;
    private final GlobalBatch batch;

    /**
     * Wraps one of the user's evaluators.
     *
     * @param evaluator the evaluator
     * @param batch the global batch its accumulators are updated with
     */
    public GlobalEvaluator(Evaluator evaluator, GlobalBatch batch) {
        super(evaluator.getName());
        this.evaluator = evaluator;
        this.batch = batch;
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        return evaluator.evaluate(labels, predictions);
    }

    @Override
    public void addAccumulator(String key) {
        evaluator.addAccumulator(key);
    }

    @Override
    public void updateAccumulators(String[] keys, NDList labels, NDList predictions) {
        evaluator.updateAccumulators(
                keys, batch.labels(labels, predictions), batch.predictions(labels, predictions));
    }

    @Override
    public void updateAccumulator(String key, NDList labels, NDList predictions) {
        evaluator.updateAccumulator(
                key, batch.labels(labels, predictions), batch.predictions(labels, predictions));
    }

    @Override
    public void resetAccumulator(String key) {
        evaluator.resetAccumulator(key);
    }

    @Override
    public float getAccumulator(String key) {
        return evaluator.getAccumulator(key);
    }

    @Override
    public String toString() {
        return evaluator + " over the global batch";
    }
}
