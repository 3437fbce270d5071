package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.launch.RankFailedException;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code bin/fsdp bench train}: trains the model zoo's GPT-2 ({@code GPT2LMHeadModel} of {@code
 * --layers}, {@code --width}, {@code --heads}, {@code --vocab}, {@code n_positions = --seq},
 * dropout off) on random tokens on {@code --nproc} ranks of this machine and prints one line:
 * {@code sharding=S nproc=N tokens_per_s=.. step_ms=.. peak_rss_mb_per_rank=..
 * model_state_mb_per_rank=.. sent_mb_per_step=..}. The slowest rank's step time counts, and the
 * largest rank's memory.
 */
@Command(
        name = "train",
        mixinStandardHelpOptions = true,
        description = {
            "Trains the model zoo's GPT-2 (AdamW, random tokens, dropout off) with FSDP on ranks of"
                    + " this machine and prints throughput, memory and traffic per rank.",
            "--sharding NONE --nproc 1 runs DJL's plain Trainer: the baseline."
        })
public final class TrainBenchCommand implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @Option(
            names = "--nproc",
            defaultValue = "2",
            description = "Ranks (default: ${DEFAULT-VALUE}).")
    private int nproc;

    @Option(
            names = "--sharding",
            defaultValue = "FULL_SHARD",
            description =
                    "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, or NONE for DJL's plain trainer"
                            + " (default: ${DEFAULT-VALUE}).")
    private String sharding;

    @Option(
            names = "--steps",
            defaultValue = "10",
            description = "Timed steps (default: ${DEFAULT-VALUE}).")
    private int steps;

    @Option(
            names = "--warmup",
            defaultValue = "2",
            description = "Untimed steps first (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Option(
            names = "--layers",
            defaultValue = "6",
            description = "Layers (default: ${DEFAULT-VALUE}).")
    private int layers;

    @Option(
            names = "--width",
            defaultValue = "384",
            description = "Width (default: ${DEFAULT-VALUE}).")
    private int width;

    @Option(
            names = "--heads",
            defaultValue = "6",
            description = "Heads (default: ${DEFAULT-VALUE}).")
    private int heads;

    @Option(
            names = "--vocab",
            defaultValue = "50257",
            description = "Vocabulary (default: ${DEFAULT-VALUE}).")
    private int vocab;

    @Option(
            names = "--seq",
            defaultValue = "128",
            description = "Sequence length (default: ${DEFAULT-VALUE}).")
    private int sequence;

    @Option(
            names = "--batch",
            defaultValue = "8",
            description = "Sequences per rank per step (default: ${DEFAULT-VALUE}).")
    private int batch;

    @Option(
            names = "--jvm-opt",
            paramLabel = "OPT",
            description = "A JVM option for every rank (repeatable; default: -Xmx1g).")
    private List<String> jvmOptions = new ArrayList<>();

    @Override
    public Integer call() throws IOException, InterruptedException {
        TrainBenchSettings settings =
                new TrainBenchSettings(
                        nproc, sharding, steps, warmup, layers, width, heads, vocab, sequence,
                        batch);
        settings.check();
        Path report = Files.createTempFile("fsdp-bench-train", "");
        try {
            Launcher.builder()
                    .setNprocPerNode(nproc)
                    .setCommand(TrainBenchRank.command(settings, report))
                    .optJavaOptions(jvmOptions.isEmpty() ? List.of("-Xmx1g") : jvmOptions)
                    .build()
                    .run();
            PrintWriter out = spec.commandLine().getOut();
            out.println(TrainBenchReport.summarize(settings, report));
            out.flush();
            return 0;
        } catch (RankFailedException e) {
            spec.commandLine().getErr().println("fsdp bench train: " + e.getMessage());
            return e.exitCode();
        } finally {
            for (int rank = 0; rank < nproc; rank++) {
                Files.deleteIfExists(Path.of(report + ".rank" + rank));
            }
            Files.deleteIfExists(report);
        }
    }
}
