package ai.djl.fsdp.bench;

import ai.djl.fsdp.launch.Launcher;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bin/fsdp bench collectives}: starts {@code --nproc} ranks on this machine through the
 * {@link Launcher}, each running {@link CollectivesBenchRank}, and prints rank 0's measurements,
 * one line per collective.
 */
@Command(
        name = "collectives",
        mixinStandardHelpOptions = true,
        description = {
            "Times all_gather, reduce_scatter and all_reduce over float32 data across ranks on this"
                    + " machine, checks their results, and prints one line per collective:",
            "op=all_gather bytes=.. time_ms=.. algbw_GBps=.. busbw_GBps=.. (nccl-tests' meanings)."
        })
public final class CollectivesBenchCommand implements Callable<Integer> {

    @Mixin private BenchRanks ranks;

    @Option(
            names = "--bytes",
            defaultValue = "67108864",
            description = "Size of the larger buffer in bytes (default: ${DEFAULT-VALUE}).")
    private long bytes;

    @Option(
            names = "--iters",
            defaultValue = "20",
            description = "Timed runs per collective (default: ${DEFAULT-VALUE}).")
    private int iterations;

    @Option(
            names = "--warmup",
            defaultValue = "5",
            description = "Untimed runs first (default: ${DEFAULT-VALUE}).")
    private int warmup;

    @Override
    public Integer call() throws IOException, InterruptedException {
        CollectivesBenchRank.checkSettings(bytes, iterations, warmup, ranks.nproc());
        return ranks.run(
                report -> CollectivesBenchRank.command(bytes, iterations, warmup, report),
                defaultJvmOptions(),
                report -> String.join(System.lineSeparator(), Files.readAllLines(report)));
    }

    /** Each rank's heap, sized by {@link CollectivesBenchPeer#heapMegabytes}. */
    private List<String> defaultJvmOptions() {
        return List.of("-Xmx" + CollectivesBenchPeer.heapMegabytes(bytes) + "m");
    }
}
