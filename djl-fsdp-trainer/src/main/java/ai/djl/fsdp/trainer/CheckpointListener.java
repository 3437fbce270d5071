package ai.djl.fsdp.trainer;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Saves sharded checkpoints of an {@link FsdpTrainer} as Hugging Face's Trainer lays them out,
 * {@code outputDir/checkpoint-<step>}: every N optimizer steps, every N epochs, and at the end of
 * training, keeping the newest few. An {@code EasyTrain.fit} program gets checkpoints by adding it
 * to its training configuration; {@link FsdpTrainer#loadCheckpoint} with {@link #newestCheckpoint}
 * resumes.
 *
 * <pre>{@code
 * config.addTrainingListeners(CheckpointListener.builder()
 *         .setOutputDir(Path.of("runs/lm"))
 *         .optSaveSteps(500)
 *         .optSaveTotalLimit(3)
 *         .build());
 * }</pre>
 */
public final class CheckpointListener extends TrainingListenerAdapter
        implements ShardedModelListener {

    private final Path outputDir;
    private final int saveSteps;
    private final int saveEpochs;
    private final boolean saveAtEnd;
    private final int saveTotalLimit;
    private final boolean async;
    private long lastSavedStep = -1;
    private boolean ended;

    private CheckpointListener(Builder builder) {
        outputDir = builder.outputDir;
        saveSteps = builder.saveSteps;
        saveEpochs = builder.saveEpochs;
        saveAtEnd = builder.saveAtEnd;
        saveTotalLimit = builder.saveTotalLimit;
        async = builder.async;
    }

    /**
     * Returns the newest complete checkpoint under an output directory, the one a run resumes from:
     * a {@code checkpoint-<step>} directory whose writing finished on every rank. One being
     * written, or left half written by a rank that died, is never returned.
     *
     * @param outputDir the directory checkpoints are saved under
     * @return the checkpoint's directory, or empty when there is none
     */
    public static Optional<Path> newestCheckpoint(Path outputDir) {
        return CheckpointDirectory.newest(outputDir);
    }

    /** Returns a builder; the output directory is required. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts a training with nothing saved yet and its end not reached: a listener can serve one
     * trainer after another.
     */
    @Override
    public void onTrainingBegin(Trainer trainer) {
        ended = false;
        lastSavedStep = -1;
    }

    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        FsdpTrainer fsdp = (FsdpTrainer) trainer;
        long step = fsdp.getTrainingState().getStep();
        if (saveSteps > 0
                && fsdp.sharded().isAtStepBoundary()
                && step > 0
                && step % saveSteps == 0) {
            save(fsdp, async);
        }
    }

    /** Saves every {@code saveEpochs} epochs, as the trainer counted them (once per epoch). */
    @Override
    public void onEpoch(Trainer trainer) {
        FsdpTrainer fsdp = (FsdpTrainer) trainer;
        long epoch = fsdp.getTrainingState().getEpoch();
        if (saveEpochs > 0 && epoch % saveEpochs == 0) {
            save(fsdp, async);
        }
    }

    @Override
    public void onTrainingEnd(Trainer trainer) {
        endTraining((FsdpTrainer) trainer);
    }

    @Override
    public void endTraining(FsdpTrainer trainer) {
        // A trainer closed before its model was sharded (a start that failed) has nothing to save
        // or wait for, and must not hide the start's own failure.
        if (ended || !trainer.isSharded()) {
            return;
        }
        ended = true;
        if (saveAtEnd) {
            save(trainer, false);
        }
        try {
            trainer.awaitCheckpoint();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void save(FsdpTrainer trainer, boolean inBackground) {
        long step = trainer.getTrainingState().getStep();
        if (step == lastSavedStep || !trainer.sharded().isAtStepBoundary()) {
            return;
        }
        lastSavedStep = step;
        try {
            trainer.sharded()
                    .saveCheckpoint(
                            CheckpointDirectory.of(outputDir, step), inBackground, saveTotalLimit);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Builds a {@link CheckpointListener}. */
    public static final class Builder {

        private Path outputDir;
        private int saveSteps;
        private int saveEpochs;
        private boolean saveAtEnd = true;
        private int saveTotalLimit;
        private boolean async;

        Builder() {}

        /**
         * Sets the directory the {@code checkpoint-<step>} directories go into (required; on
         * storage every rank shares).
         *
         * @param outputDir the output directory
         * @return this builder
         */
        public Builder setOutputDir(Path outputDir) {
            this.outputDir = Objects.requireNonNull(outputDir, "outputDir");
            return this;
        }

        /**
         * Saves every {@code steps} optimizer steps (default: not by steps).
         *
         * @param steps the interval, positive
         * @return this builder
         */
        public Builder optSaveSteps(int steps) {
            this.saveSteps = positive(steps, "saveSteps");
            return this;
        }

        /**
         * Saves every {@code epochs} epochs (default: not by epochs).
         *
         * @param epochs the interval, positive
         * @return this builder
         */
        public Builder optSaveEpochs(int epochs) {
            this.saveEpochs = positive(epochs, "saveEpochs");
            return this;
        }

        /**
         * Sets whether a checkpoint is saved when training ends (default true).
         *
         * @param saveAtEnd whether to save at the end
         * @return this builder
         */
        public Builder optSaveAtEnd(boolean saveAtEnd) {
            this.saveAtEnd = saveAtEnd;
            return this;
        }

        /**
         * Keeps only the newest {@code limit} checkpoints (default: all), as Hugging Face's {@code
         * save_total_limit}.
         *
         * @param limit how many to keep, positive
         * @return this builder
         */
        public Builder optSaveTotalLimit(int limit) {
            this.saveTotalLimit = positive(limit, "saveTotalLimit");
            return this;
        }

        /**
         * Sets whether periodic checkpoints are written in the background while training goes on
         * (default false); the final one is always complete when training ends.
         *
         * @param async whether to write in the background
         * @return this builder
         */
        public Builder optAsync(boolean async) {
            this.async = async;
            return this;
        }

        /**
         * Builds the listener.
         *
         * @return the listener
         * @throws IllegalStateException without an output directory
         */
        public CheckpointListener build() {
            if (outputDir == null) {
                throw new IllegalStateException(
                        "CheckpointListener needs setOutputDir: where checkpoint-<step> goes");
            }
            return new CheckpointListener(this);
        }

        private static int positive(int value, String name) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be positive, got " + value);
            }
            return value;
        }
    }
}
