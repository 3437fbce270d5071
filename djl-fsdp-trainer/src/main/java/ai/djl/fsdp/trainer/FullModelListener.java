package ai.djl.fsdp.trainer;

import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListener;

/**
 * Runs a listener that reads the whole model (a checkpoint writer such as DJL's {@code
 * SaveModelTrainingListener}) with the full parameters in the model: at each epoch and at the end
 * every rank gathers them (a collective), rank 0 alone runs the listener (so one process writes the
 * files), and the shards are all that remains afterwards.
 */
final class FullModelListener implements ShardedModelListener {

    private final TrainingListener listener;
    private final boolean writer;
    private boolean ended;

    FullModelListener(TrainingListener listener, boolean writer) {
        this.listener = listener;
        this.writer = writer;
    }

    @Override
    public void onEpoch(Trainer trainer) {
        ((FsdpTrainer) trainer)
                .withFullParameters(
                        () -> {
                            if (writer) {
                                listener.onEpoch(trainer);
                            }
                        });
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        if (writer) {
            listener.onTrainingBatch(trainer, batchData);
        }
    }

    @Override
    public void onValidationBatch(Trainer trainer, BatchData batchData) {
        if (writer) {
            listener.onValidationBatch(trainer, batchData);
        }
    }

    @Override
    public void onTrainingBegin(Trainer trainer) {
        if (writer) {
            listener.onTrainingBegin(trainer);
        }
    }

    /**
     * Runs the listener's end of training with the full parameters gathered; the trainer calls this
     * while the model is still sharded, before it closes (DJL's own call comes after the shards are
     * gone, and is then ignored).
     */
    @Override
    public void onTrainingEnd(Trainer trainer) {
        endTraining((FsdpTrainer) trainer);
    }

    @Override
    public void endTraining(FsdpTrainer trainer) {
        if (ended) {
            return;
        }
        ended = true;
        trainer.withFullParameters(
                () -> {
                    if (writer) {
                        listener.onTrainingEnd(trainer);
                    }
                });
    }
}
