package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.bench.gpt.GptOptions;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The training benchmark's own options (a picocli mixin), beside the {@link GptOptions} it shares
 * with the checkpoint benchmark: how FSDP shards, the timed steps, the attention kernel, the
 * precision, LoRA and the model family. {@link TrainBenchCommand} and each {@link TrainBenchRank}
 * parse them.
 */
final class TrainOptions {

    @Option(
            names = "--sharding",
            defaultValue = "FULL_SHARD",
            description =
                    "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2, or NONE"
                            + " for DJL's plain trainer (default: ${DEFAULT-VALUE}).")
    private String sharding;

    @Option(
            names = "--shard-group-size",
            defaultValue = "0",
            description =
                    "The ranks of one shard group under HYBRID_SHARD and HYBRID_SHARD_ZERO2,"
                            + " which divides --nproc; 0: LOCAL_WORLD_SIZE, every rank of this"
                            + " machine (default: ${DEFAULT-VALUE}).")
    private int shardGroupSize;

    @Option(
            names = "--steps",
            defaultValue = "10",
            description = "Timed steps (default: ${DEFAULT-VALUE}).")
    private int steps;

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
            paramLabel = "POLICY",
            description =
                    "The units recomputed in backward instead of keeping their graphs, whatever"
                            + " --sharding is: full (true), none (false), every:N (every N-th"
                            + " unit) or class:NAME[,NAME...] (default: full where parameters are"
                            + " freed after forward, none where they are kept).")
    private String activationCheckpointing;

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

    @Option(
            names = "--model",
            defaultValue = "gpt2",
            description =
                    "The family trained at the --layers, --width, --heads shape: gpt2, llama"
                            + " (Llama 3: llama3 RoPE, 4 query heads per key-value head), mistral"
                            + " (a sliding window of half --seq), qwen2 (q/k/v biases), qwen3"
                            + " (q/k norms) (default: ${DEFAULT-VALUE}).")
    private String model;

    @Option(
            names = "--intermediate",
            defaultValue = "0",
            paramLabel = "I",
            description =
                    "The MLP width of llama, mistral, qwen2 and qwen3 (Llama 3.2 1B: 8192); 0:"
                            + " 8/3 of --width rounded up to 64 (default: ${DEFAULT-VALUE}).")
    private int intermediate;

    @Option(
            names = "--communication-quantization",
            paramLabel = "Q",
            defaultValue = "none",
            description =
                    "Quantized collectives (ZeRO++'s qwZ and qgZ): none, or comma-separated"
                            + " weights=none|int8, gradients=none|int8|int4, block=64..2048,"
                            + " scope=all|inter-node (default: ${DEFAULT-VALUE}).")
    private String communicationQuantization;

    @Option(
            names = "--op-profile",
            paramLabel = "FILE",
            description =
                    "After the measured steps, one more step with libtorch's profiler on rank 0:"
                            + " writes its trace (Chrome trace JSON, for bench ops) to FILE and"
                            + " prints ops_per_step, the operators the host called into libtorch"
                            + " (default: none).")
    private Path opProfile;

    /** Returns where rank 0 writes the profiled step's trace, or null for no profiled step. */
    Path opProfile() {
        return opProfile;
    }

    /** Returns the settings of a run on {@code nproc} ranks with these and the shared options. */
    TrainBenchSettings settings(int nproc, GptOptions gpt) {
        return new TrainBenchSettings(
                nproc,
                sharding,
                steps,
                gpt.warmup(),
                gpt.shape(),
                attention,
                precision,
                reshardAfterForward,
                activationCheckpointing,
                loraRank,
                shardGroupSize,
                model,
                intermediate,
                communicationQuantization);
    }
}
