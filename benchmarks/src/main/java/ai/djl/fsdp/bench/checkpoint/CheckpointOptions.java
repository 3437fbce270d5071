package ai.djl.fsdp.bench.checkpoint;

import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptShape;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The checkpoint benchmark's own options (a picocli mixin), beside the {@link GptOptions} it shares
 * with the training benchmark. {@link CheckpointBenchCommand} and each {@link CheckpointBenchRank}
 * parse them.
 */
final class CheckpointOptions {

    /** GPT-2's {@code n_positions}: the position table of the 124M model. */
    static final int POSITIONS = 1024;

    @Option(
            names = "--repeats",
            defaultValue = "3",
            description = "Repetitions of each measurement (default: ${DEFAULT-VALUE}).")
    private int repeats;

    @Option(
            names = "--dir",
            description =
                    "Where to write the checkpoints, on storage every rank shares; a new folder in"
                            + " it is used and deleted (default: the temporary directory).")
    private Path directory;

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @param nproc the ranks
     * @param gpt the shared options
     * @throws IllegalArgumentException naming the option and what it must be
     */
    void check(int nproc, GptOptions gpt) {
        GptShape shape = gpt.shape();
        shape.check();
        if (nproc < 1 || repeats < 1 || gpt.warmup() < 0) {
            throw new IllegalArgumentException(
                    "--nproc and --repeats must be at least 1 and --warmup at least 0");
        }
        if (shape.sequence() > POSITIONS) {
            throw new IllegalArgumentException(
                    "--seq must be at most "
                            + POSITIONS
                            + " (GPT-2's positions), got "
                            + shape.sequence());
        }
    }

    /** Returns the repetitions of each measurement. */
    int repeats() {
        return repeats;
    }

    /** Returns the folder of the run's checkpoints, named after its report file. */
    Path directory(Path report) {
        Path parent = directory != null ? directory : Path.of(System.getProperty("java.io.tmpdir"));
        return parent.resolve(report.getFileName() + ".checkpoints");
    }
}
