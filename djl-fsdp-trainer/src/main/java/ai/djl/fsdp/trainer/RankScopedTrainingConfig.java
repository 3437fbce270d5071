package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.nn.Parameter;
import ai.djl.training.TrainingConfig;
import ai.djl.training.evaluator.Evaluator;
import ai.djl.training.initializer.Initializer;
import ai.djl.training.listener.LoggingTrainingListener;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.util.PairList;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * The user's training configuration as one rank sees it: on ranks other than 0 the logging
 * listener (log lines and the progress bar) is left out, so a job prints once.
 */
final class RankScopedTrainingConfig implements TrainingConfig {

    private final TrainingConfig config;
    private final boolean logging;

    RankScopedTrainingConfig(TrainingConfig config, boolean logging) {
        this.config = config;
        this.logging = logging;
    }

    @Override
    public Device[] getDevices() {
        return config.getDevices();
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
        if (logging) {
            return config.getTrainingListeners();
        }
        return config.getTrainingListeners().stream()
                .filter(listener -> !(listener instanceof LoggingTrainingListener))
                .collect(Collectors.toList());
    }
}
