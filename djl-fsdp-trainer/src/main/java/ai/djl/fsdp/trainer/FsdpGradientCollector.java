package ai.djl.fsdp.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.training.GradientCollector;

/**
 * The gradient collector of an {@link FsdpTrainer}: it keeps the engine's collector open (grad
 * mode) and runs FSDP's backward, which ends with this rank's reduced gradients on its shards.
 */
final class FsdpGradientCollector implements GradientCollector {

    private final GradientCollector engineCollector;
    private final FsdpTrainer trainer;

    FsdpGradientCollector(GradientCollector engineCollector, FsdpTrainer trainer) {
        this.engineCollector = engineCollector;
        this.trainer = trainer;
    }

    @Override
    public void backward(NDArray target) {
        trainer.sharded().backward(target);
    }

    /** Zeroes the shards' accumulated gradients (each optimizer step does so too). */
    @Override
    public void zeroGradients() {
        trainer.sharded().zeroGradients();
    }

    @Override
    public void close() {
        engineCollector.close();
    }
}
