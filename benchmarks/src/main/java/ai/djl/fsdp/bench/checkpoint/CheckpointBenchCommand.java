package ai.djl.fsdp.bench.checkpoint;

import ai.djl.fsdp.bench.BenchRanks;
import ai.djl.fsdp.bench.train.TrainBenchSettings;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bin/fsdp bench checkpoint}: trains the model zoo's GPT-2 (by default the 124M shape:
 * {@code n_positions} 1024, fresh random weights, AdamW, dropout off) for a few steps under
 * FULL_SHARD on {@code --nproc} ranks of this machine, then measures sharded checkpoints against
 * the full Hugging Face save: time, bytes on disk, the time a step is blocked by a synchronous
 * against an asynchronous save, and peak resident memory per rank. Prints one line per figure, each
 * the median of {@code --repeats} repetitions, the slowest rank's time and the largest rank's
 * memory.
 */
@Command(
        name = "checkpoint",
        mixinStandardHelpOptions = true,
        description = {
            "Measures sharded checkpoint save and load, the full Hugging Face save, the step time"
                    + " blocked by a synchronous against an asynchronous save, and peak RSS per"
                    + " rank, on the model zoo's GPT-2 (AdamW, random tokens) under FULL_SHARD."
        })
public final class CheckpointBenchCommand implements Callable<Integer> {

    /** GPT-2's {@code n_positions}: the position table of the 124M model. */
    static final int POSITIONS = 1024;

    /** The zoo model's own attention kernel: attention does not enter a checkpoint's cost. */
    static final String ATTENTION = "explicit";

    @Mixin private BenchRanks ranks;

    @Option(
            names = "--repeats",
            defaultValue = "3",
            description = "Repetitions of each measurement (default: ${DEFAULT-VALUE}).")
    private int repeats;

    @Option(
            names = "--warmup",
            defaultValue = "2",
            description = "Training steps before the first save (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Option(
            names = "--layers",
            defaultValue = "12",
            description = "Layers (default: ${DEFAULT-VALUE}).")
    private int layers;

    @Option(
            names = "--width",
            defaultValue = "768",
            description = "Width (default: ${DEFAULT-VALUE}).")
    private int width;

    @Option(
            names = "--heads",
            defaultValue = "12",
            description = "Heads (default: ${DEFAULT-VALUE}).")
    private int heads;

    @Option(
            names = "--vocab",
            defaultValue = "50257",
            description = "Vocabulary (default: ${DEFAULT-VALUE}).")
    private int vocab;

    @Option(
            names = "--seq",
            defaultValue = "64",
            description = "Tokens per training sequence, at most 1024 (default: ${DEFAULT-VALUE}).")
    private int sequence;

    @Option(
            names = "--batch",
            defaultValue = "2",
            description = "Sequences per rank per step (default: ${DEFAULT-VALUE}).")
    private int batch;

    @Option(
            names = "--dir",
            description =
                    "Where to write the checkpoints, on storage every rank shares; a new folder in"
                            + " it is used and deleted (default: the temporary directory).")
    private Path directory;

    @Override
    public Integer call() throws IOException, InterruptedException {
        TrainBenchSettings settings =
                new TrainBenchSettings(
                        ranks.nproc(),
                        "FULL_SHARD",
                        repeats,
                        warmup,
                        layers,
                        width,
                        heads,
                        vocab,
                        sequence,
                        batch,
                        CheckpointBenchCommand.ATTENTION,
                        "fp32",
                        null,
                        null,
                        0);
        settings.check();
        if (sequence > POSITIONS || repeats < 1) {
            throw new IllegalArgumentException(
                    "--seq must be at most " + POSITIONS + " and --repeats at least 1");
        }
        Path parent = directory != null ? directory : Path.of(System.getProperty("java.io.tmpdir"));
        return ranks.run(
                report -> CheckpointBenchRank.command(settings, parent, report),
                List.of("-Xmx1g"),
                report -> CheckpointBenchReport.summarize(ranks.nproc(), report));
    }
}
