package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.bench.BenchRanks;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bin/fsdp bench train}: trains the model zoo's GPT-2 ({@code GPT2LMHeadModel} of {@code
 * --layers}, {@code --width}, {@code --heads}, {@code --vocab}, {@code n_positions = --seq},
 * dropout off) on random tokens on {@code --nproc} ranks of this machine and prints one line:
 * {@code sharding=S nproc=N attention=K precision=P lora_rank=R reshard_after_forward=B
 * activation_checkpointing=B tokens_per_s=.. step_ms=.. loss=.. peak_rss_mb_per_rank=..
 * model_state_mb_per_rank=.. sent_mb_per_step=.. comm_wait_ms_per_step=.. model_gflops_per_s=..
 * peak_gflops=.. peak_fraction=.. fp32_gflops_per_thread=.. bf16_gflops_per_thread=..}. The slowest
 * rank's step time counts, the ranks' mean loss, and the largest rank's memory, traffic and wait.
 * Before the ranks start it measures this machine's matrix-product rate per thread ({@link
 * MatMulPeak}); the peak is that rate in the run's compute precision times the threads all ranks
 * use.
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

    @Mixin private BenchRanks ranks;

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
            names = "--attention",
            defaultValue = "explicit",
            description =
                    "The attention kernel: explicit (DJL operators) or sdpa (libtorch's fused"
                            + " scaled-dot-product attention) (default: ${DEFAULT-VALUE}).")
    private String attention;

    @Option(
            names = "--precision",
            defaultValue = "fp32",
            description =
                    "fp32; bf16: bfloat16 all-gathers and compute; fp16: float16 all-gathers and"
                            + " compute with dynamic loss scaling; float32 master weights,"
                            + " optimizer state, gradient reduction and loss (default:"
                            + " ${DEFAULT-VALUE}).")
    private String precision;

    @Option(
            names = "--reshard-after-forward",
            arity = "1",
            paramLabel = "true|false",
            description =
                    "Free each unit's gathered parameters after its forward (default: what"
                            + " --sharding does; FULL_SHARD true, SHARD_GRAD_OP false).")
    private Boolean reshardAfterForward;

    @Option(
            names = "--activation-checkpointing",
            arity = "1",
            paramLabel = "true|false",
            description =
                    "Recompute each unit in backward instead of keeping its graph (default: what"
                            + " --sharding does; FULL_SHARD true, SHARD_GRAD_OP false).")
    private Boolean activationCheckpointing;

    @Option(
            names = "--lora-rank",
            defaultValue = "0",
            description =
                    "0 trains every parameter; R > 0 trains LoRA adapters of rank R (alpha 2R) on"
                            + " every linear projection but the head, as finetune --use_peft_lora"
                            + " does with all-linear targets; the base is frozen and, with"
                            + " --precision bf16, stored in bfloat16 only (default:"
                            + " ${DEFAULT-VALUE}).")
    private int loraRank;

    @Override
    public Integer call() throws IOException, InterruptedException {
        TrainBenchSettings settings =
                new TrainBenchSettings(
                        ranks.nproc(),
                        sharding,
                        steps,
                        warmup,
                        layers,
                        width,
                        heads,
                        vocab,
                        sequence,
                        batch,
                        attention,
                        precision,
                        reshardAfterForward,
                        activationCheckpointing,
                        loraRank);
        settings.check();
        // Measured before the ranks start, so that nothing else runs beside it.
        MatMulPeak peak = MatMulPeak.measure();
        return ranks.run(
                report -> TrainBenchRank.command(settings, report),
                List.of("-Xmx1g"),
                report -> TrainBenchReport.summarize(settings, peak, report));
    }
}
