package ai.djl.fsdp.bench;

import ai.djl.fsdp.bench.ranks.BenchRanks;
import ai.djl.fsdp.launch.Launcher;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

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
            "op=all_gather bytes=.. time_ms=.. algbw_GBps=.. busbw_GBps=.. (nccl-tests' meanings).",
            "With --shard-group-size S smaller than --nproc, as hybrid sharding runs them:"
                + " all_gather and reduce_scatter inside shard groups of S ranks, all_reduce of a"
                + " 1/S shard across the replicate groups, each line adding group=shard|replicate"
                + " ranks=.. sent_inside_mb=.. sent_across_mb=.. (what one rank sends per"
                + " collective)."
        })
public final class CollectivesBenchCommand implements Callable<Integer> {

    @Mixin private BenchRanks ranks;

    @Mixin private CollectivesOptions options;

    @Override
    public Integer call() throws IOException, InterruptedException {
        options.check(ranks.nproc());
        return ranks.run(
                report -> {
                    List<String> command =
                            new ArrayList<>(
                                    BenchRanks.rankCommand(CollectivesBenchRank.class, options));
                    command.add("--report=" + report);
                    return command;
                },
                defaultJvmOptions(),
                report -> String.join(System.lineSeparator(), Files.readAllLines(report)));
    }

    /** Each rank's heap, sized by {@link CollectivesBenchPeer#heapMegabytes}. */
    private List<String> defaultJvmOptions() {
        return List.of("-Xmx" + CollectivesBenchPeer.heapMegabytes(options.bytes()) + "m");
    }
}
