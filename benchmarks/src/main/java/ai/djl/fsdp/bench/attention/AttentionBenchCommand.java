package ai.djl.fsdp.bench.attention;

import ai.djl.fsdp.bench.attention.AttentionBenchRank.Measurement;
import ai.djl.fsdp.launch.Launcher;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bin/fsdp bench attention}: times one causal self-attention forward and backward ({@code
 * [B, H, T, D]} queries, keys and values that require gradients) with each attention kernel at each
 * sequence length, each configuration in a fresh process of its own so that its peak resident
 * memory is its own, and prints one line per sequence length: the kernels' median step times and
 * the peak memory the step added, and the fused kernel's ratios to the explicit one ({@code
 * peak_reset=0} at its end where the peak could not be reset before the steps).
 */
@Command(
        name = "attention",
        mixinStandardHelpOptions = true,
        description =
                "Times causal attention forward+backward, explicit against libtorch's fused"
                        + " kernel (sdpa), and measures the peak memory each adds.")
public final class AttentionBenchCommand implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @Option(
            names = "--seq",
            split = ",",
            defaultValue = "128,256,512,1024,2048",
            description = "Sequence lengths (default: ${DEFAULT-VALUE}).")
    private List<Integer> sequences;

    @Option(
            names = "--batch",
            defaultValue = "2",
            description = "Sequences (default: ${DEFAULT-VALUE}).")
    private int batch;

    @Option(
            names = "--heads",
            defaultValue = "6",
            description = "Heads (default: ${DEFAULT-VALUE}).")
    private int heads;

    @Option(
            names = "--head-dim",
            defaultValue = "64",
            description = "Width of a head (default: ${DEFAULT-VALUE}).")
    private int headDim;

    @Option(
            names = "--iters",
            defaultValue = "5",
            description = "Timed steps per configuration (default: ${DEFAULT-VALUE}).")
    private int iterations;

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (batch < 1 || heads < 1 || headDim < 1 || iterations < 1) {
            throw new IllegalArgumentException(
                    "--batch, --heads, --head-dim and --iters must be positive");
        }
        PrintWriter out = spec.commandLine().getOut();
        for (int sequence : sequences) {
            if (sequence < 1) {
                throw new IllegalArgumentException("--seq lengths must be positive: " + sequence);
            }
            Measurement explicit = measure(AttentionKernel.EXPLICIT, sequence);
            Measurement fused = measure(AttentionKernel.SDPA, sequence);
            out.println(line(sequence, explicit, fused));
            out.flush();
        }
        return 0;
    }

    /**
     * Returns the line of one sequence length, ending in {@code peak_reset=0} where a process could
     * not reset its peak resident set ({@code /proc/self/clear_refs}): its peak then counts from
     * the process's own earlier peak.
     */
    static String line(int sequence, Measurement explicit, Measurement fused) {
        return String.format(
                        Locale.ROOT,
                        "seq=%d explicit_ms=%.2f sdpa_ms=%.2f time_ratio=%.2f"
                                + " explicit_peak_mb=%.1f sdpa_peak_mb=%.1f memory_ratio=%.2f",
                        sequence,
                        explicit.millis(),
                        fused.millis(),
                        fused.millis() / explicit.millis(),
                        explicit.peakMb(),
                        fused.peakMb(),
                        fused.peakMb() / explicit.peakMb())
                + (explicit.peakReset() && fused.peakReset() ? "" : " peak_reset=0");
    }

    /** Runs one configuration in its own process; returns what it measured. */
    private Measurement measure(AttentionKernel kernel, int sequence)
            throws IOException, InterruptedException {
        Path report = Files.createTempFile("fsdp-bench-attention", "");
        try {
            List<String> command = new ArrayList<>();
            command.add(AttentionBenchRank.class.getName());
            command.add(kernel.getName());
            for (int value : new int[] {batch, heads, sequence, headDim, iterations}) {
                command.add(Integer.toString(value));
            }
            command.add(report.toString());
            Launcher.builder()
                    .setNprocPerNode(1)
                    .setCommand(command)
                    .optJavaOptions(List.of("-Xmx256m"))
                    .build()
                    .run();
            return Measurement.parse(Files.readString(report, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(report);
        }
    }
}
