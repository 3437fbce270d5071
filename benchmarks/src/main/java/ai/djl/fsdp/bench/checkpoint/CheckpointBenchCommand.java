package ai.djl.fsdp.bench.checkpoint;

import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptRank;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.bench.ranks.BenchRanks;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

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

    @Mixin private BenchRanks ranks;

    @Mixin private GptOptions gpt = new GptOptions(2, new GptShape(12, 768, 12, 50257, 64, 2));

    @Mixin private CheckpointOptions checkpoint;

    @Override
    public Integer call() throws IOException, InterruptedException {
        checkpoint.check(ranks.nproc(), gpt);
        return ranks.run(
                report ->
                        BenchRanks.rankCommand(
                                CheckpointBenchRank.class, gpt, checkpoint, new GptRank(report)),
                List.of("-Xmx1g"),
                report -> CheckpointBenchReport.summarize(ranks.nproc(), report));
    }
}
