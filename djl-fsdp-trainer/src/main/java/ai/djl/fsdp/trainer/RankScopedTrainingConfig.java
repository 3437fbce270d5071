package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.TrainingState;
import ai.djl.nn.Parameter;
import ai.djl.training.Trainer;
import ai.djl.training.TrainingConfig;
import ai.djl.training.evaluator.Evaluator;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.listener.LoggingTrainingListener;
import ai.djl.training.listener.SaveModelTrainingListener;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.function.Predicate;

/**
 * The user's training configuration as one rank sees it: on ranks other than 0 the logging listener
 * (log lines and the progress bar) is left out, so a job prints once; checkpoint writers run on
 * rank 0 with the full parameters gathered ({@link FullModelListener}); the device list is the
 * rank's one device ({@link ai.djl.fsdp.dist.RankDevice#forTraining}). The trainer's own epoch
 * counter comes first, so every listener's {@code onEpoch} sees the epoch just ended counted, once
 * however many listeners there are.
 */
final class RankScopedTrainingConfig implements TrainingConfig {

    /** Counts each epoch DJL's events end in the trainer's state, which checkpoints save. */
    private static final TrainingListener EPOCH_COUNTER =
            new TrainingListenerAdapter() {
                @Override
                public void onEpoch(Trainer trainer) {
                    TrainingState state = ((FsdpTrainer) trainer).getTrainingState();
                    state.setEpoch(state.getEpoch() + 1);
                }
            };

    private final TrainingConfig config;
    private final Device device;
    private final List<TrainingListener> listeners;
    private final List<ShardedModelListener> shardedModelListeners;

    /**
     * Creates the rank's view.
     *
     * @param config the user's configuration
     * @param logging whether this rank keeps its logging listeners
     * @param writer whether this rank writes checkpoints (rank 0)
     * @param device the one device this rank trains on, in place of the configuration's list
     */
    RankScopedTrainingConfig(
            TrainingConfig config, boolean logging, boolean writer, Device device) {
        this.config = config;
        this.device = device;
        shardedModelListeners = new ArrayList<>();
        listeners = new ArrayList<>();
        listeners.add(EPOCH_COUNTER);
        for (TrainingListener listener : config.getTrainingListeners()) {
            if (listener instanceof SaveModelTrainingListener) {
                FullModelListener full = new FullModelListener(listener, writer);
                shardedModelListeners.add(full);
                listeners.add(full);
            } else if (listener instanceof ShardedModelListener sharded) {
                shardedModelListeners.add(sharded);
                listeners.add(listener);
            } else if (logging || !(listener instanceof LoggingTrainingListener)) {
                listeners.add(listener);
            }
        }
    }

    /** Returns the listeners that need the sharded model at training end, ended before close. */
    List<ShardedModelListener> getShardedModelListeners() {
        return shardedModelListeners;
    }

    @Override
    public Device[] getDevices() {
        return new Device[] {device};
    }

    @Override
    public PairList<Initializer, Predicate<Parameter>> getInitializers() {
        return config.getInitializers();
    }

    @Override
    public Optimizer getOptimizer() {
        return config.getOptimizer();
    }

    @Override
    public Loss getLossFunction() {
        return config.getLossFunction();
    }

    @Override
    public ExecutorService getExecutorService() {
        return config.getExecutorService();
    }

    @Override
    public List<Evaluator> getEvaluators() {
        return config.getEvaluators();
    }

    @Override
    public List<TrainingListener> getTrainingListeners() {
        return listeners;
    }
}
