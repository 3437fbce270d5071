package ai.djl.fsdp.zoo.finetune;

import ai.djl.training.Trainer;
import ai.djl.training.listener.EvaluatorTrainingListener;
import ai.djl.training.listener.TrainingListener;
import java.util.ArrayList;
import java.util.List;

/**
 * A user's DJL listener as {@code --listeners} attaches it: it counts the events it hears and keeps
 * the step's loss each {@code onTrainingBatch} finds in the trainer's metrics, under the name DJL's
 * own {@link EvaluatorTrainingListener} gives a batch's loss. The instances the command created are
 * kept in {@link #CREATED}, for the test to read.
 */
public class RecordingListener implements TrainingListener {

    /** The instances created, in order. */
    static final List<RecordingListener> CREATED = new ArrayList<>();

    int trainingBegins;
    int trainingBatches;
    int epochs;
    int validationBatches;
    int trainingEnds;
    final List<Double> losses = new ArrayList<>();

    /** Creates the listener; {@code --listeners} calls this constructor. */
    public RecordingListener() {
        synchronized (CREATED) {
            CREATED.add(this);
        }
    }

    @Override
    public void onEpoch(Trainer trainer) {
        epochs++;
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        trainingBatches++;
        String name =
                EvaluatorTrainingListener.metricName(
                        trainer.getLoss(), EvaluatorTrainingListener.TRAIN_ALL);
        losses.add(trainer.getMetrics().latestMetric(name).getValue());
    }

    @Override
    public void onValidationBatch(Trainer trainer, BatchData batchData) {
        validationBatches++;
    }

    @Override
    public void onTrainingBegin(Trainer trainer) {
        trainingBegins++;
    }

    @Override
    public void onTrainingEnd(Trainer trainer) {
        trainingEnds++;
    }
}
