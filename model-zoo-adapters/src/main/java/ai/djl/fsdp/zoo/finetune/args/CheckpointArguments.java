package ai.djl.fsdp.zoo.finetune.args;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.trainer.CheckpointListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * Hugging Face's checkpoint flags: when sharded checkpoints of the whole training state go to
 * {@code output_dir/checkpoint-<step>}, how many are kept, and which one a run resumes from.
 */
public final class CheckpointArguments {

    /** The extras key of the sampler's epoch in a checkpoint's training state. */
    public static final String SAMPLER_EPOCH = "sampler_epoch";

    /** The extras key of the batches the sampler had read in that epoch. */
    public static final String SAMPLER_BATCHES = "sampler_batches_read";

    @Option(
            names = "--save_strategy",
            defaultValue = "steps",
            description =
                    "When to save a checkpoint-<step> of the whole training state: steps, epoch"
                            + " or no (default ${DEFAULT-VALUE}).")
    public String saveStrategy;

    @Option(
            names = "--save_steps",
            defaultValue = "500",
            description =
                    "With --save_strategy steps, save every this many steps (default"
                            + " ${DEFAULT-VALUE}).")
    public int saveSteps;

    @Option(
            names = "--save_total_limit",
            description = "Keep only the newest this many checkpoints (default: all).")
    public Integer saveTotalLimit;

    @Option(
            names = "--resume_from_checkpoint",
            arity = "0..1",
            fallbackValue = "True",
            description =
                    "Resume from this checkpoint directory; bare or True: the newest complete"
                            + " checkpoint-<step> in --output_dir.")
    public String resumeFromCheckpoint;

    /** Checks the flags' values, naming the flag and the fix. */
    public void check() {
        String strategy = saveStrategy.toLowerCase(Locale.ROOT);
        if (!strategy.equals("steps") && !strategy.equals("epoch") && !strategy.equals("no")) {
            throw new IllegalArgumentException(
                    "--save_strategy must be steps, epoch or no, got " + saveStrategy);
        }
        if (strategy.equals("steps") && saveSteps < 1) {
            throw new IllegalArgumentException(
                    "--save_steps must be a positive number of steps, got " + saveSteps);
        }
        if (saveTotalLimit != null && saveTotalLimit < 1) {
            throw new IllegalArgumentException(
                    "--save_total_limit must be at least 1, got " + saveTotalLimit);
        }
    }

    /**
     * Returns the trainer's checkpoint listener for these flags: {@code
     * output_dir/checkpoint-<step>} after every {@code --save_steps} steps ({@code steps}) or at
     * each epoch's end ({@code epoch}), the newest {@code --save_total_limit} kept; none at the end
     * of training beyond those.
     *
     * @param outputDir the run's output directory
     * @return the listener, empty with {@code --save_strategy no}
     */
    public Optional<CheckpointListener> newListener(Path outputDir) {
        CheckpointListener.Builder builder =
                CheckpointListener.builder().setOutputDir(outputDir).optSaveAtEnd(false);
        switch (saveStrategy.toLowerCase(Locale.ROOT)) {
            case "steps" -> builder.optSaveSteps(saveSteps);
            case "epoch" -> builder.optSaveEpochs(1);
            default -> {
                return Optional.empty();
            }
        }
        if (saveTotalLimit != null) {
            builder.optSaveTotalLimit(saveTotalLimit);
        }
        return Optional.of(builder.build());
    }

    /**
     * Returns the checkpoint to resume from, or null when the run starts fresh.
     *
     * @param outputDir the run's output directory
     * @return the checkpoint directory
     * @throws IllegalArgumentException if none is found
     */
    public Path resumeDirectory(Path outputDir) {
        if (resumeFromCheckpoint == null
                || resumeFromCheckpoint.equalsIgnoreCase("false")
                || resumeFromCheckpoint.isEmpty()) {
            return null;
        }
        if (resumeFromCheckpoint.equalsIgnoreCase("true")) {
            return CheckpointDirectory.newest(outputDir)
                    .orElseThrow(
                            () ->
                                    new IllegalArgumentException(
                                            "--resume_from_checkpoint: no complete"
                                                + " checkpoint-<step> directory in --output_dir "
                                                    + outputDir
                                                    + "; name one, or start without the flag"));
        }
        Path directory = Path.of(resumeFromCheckpoint);
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException(
                    "--resume_from_checkpoint " + directory + " is not a directory");
        }
        return directory;
    }
}
