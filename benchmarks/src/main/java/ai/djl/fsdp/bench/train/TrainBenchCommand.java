package ai.djl.fsdp.bench.train;

import ai.djl.Device;
import ai.djl.fsdp.bench.gpt.GptOptions;
import ai.djl.fsdp.bench.gpt.GptRank;
import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.bench.ranks.BenchRanks;
import ai.djl.fsdp.dist.RankDevice;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code bin/fsdp bench train}: trains the model zoo's GPT-2 ({@code GPT2LMHeadModel} of {@code
 * --layers}, {@code --width}, {@code --heads}, {@code --vocab}, {@code n_positions = --seq},
 * dropout off), or with {@code --model} a family built on Llama's block at that shape ({@link
 * BenchModel}), on random tokens on {@code --nproc} ranks of this machine and prints one line:
 * {@code sharding=S nproc=N attention=K precision=P lora_rank=R reshard_after_forward=B
 * activation_checkpointing=POLICY tokens_per_s=.. step_ms=.. loss=.. peak_rss_mb_per_rank=..
 * model_state_mb_per_rank=.. sent_mb_per_step=.. comm_wait_ms_per_step=.. model_gflops_per_s=..
 * peak_gflops=.. peak_fraction=.. fp32_gflops_per_thread=.. bf16_gflops_per_thread=..
 * ideal_mb_per_rank=.. peak_rss_over_ideal=.. ... model=M communication_quantization=Q
 * sent_all_gather_mb_per_step=.. sent_reduce_scatter_mb_per_step=.. sent_all_reduce_mb_per_step=..
 * sent_other_mb_per_step=..} (the bytes sent by kind of collective), and with {@code --op-profile}
 * {@code ops_per_step=..}. The slowest rank's step time counts, the ranks' mean loss, and the
 * largest rank's memory, traffic and wait. The ranks start as {@code finetune} does ({@code
 * ShardedStart}: unit by unit, adapters added before, the frozen base in the compute type); the
 * ideal is a rank's model state plus the largest unit's full parameters in the compute type. After
 * the ranks end it measures the matrix-product rate of the ranks' device ({@link MatMulPeak}): per
 * thread on the CPU, per device on GPUs; the peak is that rate in the run's compute precision times
 * the threads all ranks use, or times the ranks on GPUs.
 */
@Command(
        name = "train",
        mixinStandardHelpOptions = true,
        description = {
            "Trains the model zoo's GPT-2, or the --model family at its shape (AdamW, random"
                    + " tokens, dropout off) with FSDP on ranks of this machine and prints"
                    + " throughput, memory and traffic per rank.",
            "--sharding NONE --nproc 1 runs DJL's plain Trainer: the baseline."
        })
public final class TrainBenchCommand implements Callable<Integer> {

    @Mixin private BenchRanks ranks;

    @Mixin private GptOptions gpt = new GptOptions(2, new GptShape(6, 384, 6, 50257, 128, 8));

    @Mixin private TrainOptions training;

    @Override
    public Integer call() throws IOException, InterruptedException {
        TrainBenchSettings settings = training.settings(ranks.nproc(), gpt);
        settings.check();
        Device device = RankDevice.of(0, ranks.nproc());
        return ranks.run(
                report ->
                        BenchRanks.rankCommand(
                                TrainBenchRank.class, gpt, training, new GptRank(report)),
                List.of("-Xmx1g"),
                // The peak is measured once the ranks have ended: nothing else runs beside it,
                // and on a GPU this process holds no device memory while they train.
                report -> TrainBenchReport.summarize(settings, MatMulPeak.measure(device), report));
    }
}
