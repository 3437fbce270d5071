package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.trainer.metrics.GlobalBatch;
import ai.djl.fsdp.trainer.metrics.GlobalEvaluator;
import ai.djl.fsdp.trainer.metrics.GlobalLoss;
import ai.djl.fsdp.trainer.metrics.MeteredProcessGroup;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Dataset;
import ai.djl.training.evaluator.Evaluator;
import ai.djl.training.loss.Loss;
import ai.djl.translate.TranslateException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A DJL {@link Trainer} on one rank of a process group, what any data-parallel trainer needs before
 * sharding: the rank's own device for the trainer's arrays, this rank's slice of each global batch,
 * evaluators and a loss that accumulate over the global batch, and figures combined over the ranks.
 * {@link FsdpTrainer} adds the sharded model on top.
 */
abstract class RankTrainer extends Trainer {

    private final MeteredProcessGroup group;
    private final NDManager deviceManager;
    // No initializer: DJL's constructor asks for the evaluators before this class's fields are set.
    private List<Evaluator> globalEvaluators;
    private GlobalLoss globalLoss;

    RankTrainer(Model model, RankScopedTrainingConfig trainingConfig, ProcessGroup group) {
        super(model, trainingConfig);
        // DJL's Model.newInstance puts every rank's model manager on gpu(0): work on the rank's.
        deviceManager = onRankDevice(super.getManager());
        this.group = new MeteredProcessGroup(group);
    }

    /** Returns the trainer's process group, metered: it counts the bytes each step sends. */
    MeteredProcessGroup group() {
        return group;
    }

    /** Returns the trainer's manager, on this rank's device. */
    @Override
    public NDManager getManager() {
        return deviceManager != null ? deviceManager : super.getManager();
    }

    /** Returns {@code manager}, or a sub-manager of it on this rank's device. */
    NDManager onRankDevice(NDManager manager) {
        Device device = getDevices()[0];
        return device.equals(manager.getDevice()) ? manager : manager.newSubManager(device);
    }

    @Override
    public Iterable<Batch> iterateDataset(Dataset dataset) throws IOException, TranslateException {
        Iterable<Batch> batches = super.iterateDataset(dataset);
        return group.getSize() == 1
                ? batches
                : new RankBatches(batches, group.getRank(), group.getSize());
    }

    /**
     * Returns the training configuration's evaluators and the loss, each updated with the global
     * batch: what every rank's slice of it gives, gathered (one all-gather of the labels and the
     * predictions per batch, shared by the evaluators). What they accumulate, and so {@link
     * #getTrainingResult()}, DJL's logging and what its listeners save, is what DJL's trainer
     * reports on one process over the global batch, on every rank. Their {@code evaluate} stays
     * this rank's. Every rank's listeners must update them alike (DJL's do).
     */
    @Override
    public List<Evaluator> getEvaluators() {
        if (globalEvaluators == null) {
            GlobalBatch batch = new GlobalBatch(() -> group);
            List<Evaluator> evaluators = new ArrayList<>();
            for (Evaluator evaluator : super.getEvaluators()) {
                if (evaluator == super.getLoss()) {
                    globalLoss = new GlobalLoss(super.getLoss(), batch);
                    evaluators.add(globalLoss);
                } else {
                    evaluators.add(new GlobalEvaluator(evaluator, batch));
                }
            }
            globalEvaluators = List.copyOf(evaluators);
        }
        return globalEvaluators;
    }

    /**
     * Returns the training configuration's loss: its {@code evaluate} is this rank's loss, its
     * accumulators are the global batch's (see {@link #getEvaluators}).
     */
    @Override
    public Loss getLoss() {
        getEvaluators();
        return globalLoss;
    }

    /**
     * Combines a figure of this rank's with every other rank's (a collective: every rank calls it),
     * such as a count a listener kept of its rank's batches.
     *
     * @param value this rank's value
     * @param op how the ranks' values combine: their sum or their mean
     * @return the combined value, the same on every rank (float32 precision)
     */
    public double allReduce(double value, ReduceOp op) {
        try (NDManager scratch = NDManager.newBaseManager(group.getDevice())) {
            NDArray array = scratch.create(new float[] {(float) value});
            group.allReduce(array, op);
            return array.getFloat(0);
        }
    }

    /** Returns this process's rank in the trainer's process group. */
    public int getRank() {
        return group.getRank();
    }
}
