package ai.djl.fsdp.trainer.metrics;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.loss.Loss;

/**
 * The training configuration's loss as an {@link ai.djl.fsdp.trainer.FsdpTrainer} hands it out
 * ({@code getLoss()} and among the evaluators): a {@link Loss}, since DJL's listeners tell the loss
 * by identity, whose {@link #evaluate} is this rank's loss (what backward runs from) and whose
 * accumulators are updated with the global batch (see {@link GlobalEvaluator}).
 */
public final class GlobalLoss extends Loss {

    private final GlobalEvaluator global;

    /**
     * Wraps the training configuration's loss.
     *
     * @param loss the loss
     * @param batch the global batch its accumulators are updated with
     */
    public GlobalLoss(Loss loss, GlobalBatch batch) {
        super(loss.getName());
        global = new GlobalEvaluator(loss, batch);
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        return global.evaluate(labels, predictions);
    }

    @Override
    public void addAccumulator(String key) {
        global.addAccumulator(key);
    }

    @Override
    public void updateAccumulators(String[] keys, NDList labels, NDList predictions) {
        global.updateAccumulators(keys, labels, predictions);
    }

    @Override
    public void updateAccumulator(String key, NDList labels, NDList predictions) {
        global.updateAccumulator(key, labels, predictions);
    }

    @Override
    public void resetAccumulator(String key) {
        global.resetAccumulator(key);
    }

    @Override
    public float getAccumulator(String key) {
        return global.getAccumulator(key);
    }

    @Override
    public String toString() {
        return global.toString();
    }
}
