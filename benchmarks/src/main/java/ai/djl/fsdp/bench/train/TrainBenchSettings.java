package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.bench.gpt.GptShape;
import ai.djl.fsdp.trainer.ActivationCheckpointing;
import ai.djl.fsdp.trainer.CommunicationQuantization;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.ModelConfig;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import java.util.Set;

/**
 * What the training benchmark runs.
 *
 * @param nproc ranks
 * @param sharding a {@code ShardingStrategy} name, or {@code NONE} for DJL's plain trainer
 * @param steps timed steps
 * @param warmup untimed steps first
 * @param shape the model's shape and the batch
 * @param attention the zoo's attention kernel, {@code explicit} or {@code sdpa}
 * @param precision the compute precision, {@code fp32}, {@code bf16} or {@code fp16}
 * @param reshardAfterForward whether units free their gathered parameters after forward; null for
 *     what the strategy does
 * @param activationCheckpointing the units recomputed in backward, as {@link
 *     ActivationCheckpointing#parse} reads it; null for the default ({@link
 *     ActivationCheckpointing#defaultFor})
 * @param loraRank 0 to train every parameter; else the rank of LoRA adapters on every linear
 *     projection but the head ({@code all-linear}, alpha twice the rank), the base frozen
 * @param shardGroupSize the ranks of a shard group under the hybrid strategies; 0 for {@code
 *     LOCAL_WORLD_SIZE} (all {@code nproc} ranks of this machine)
 * @param model the family trained at {@code shape}: {@code gpt2}, {@code llama}, {@code mistral},
 *     {@code qwen2} or {@code qwen3} ({@link BenchModel})
 * @param intermediate the MLP's width of the Llama-based families; 0 for the family's proportion
 * @param communicationQuantization what the collectives quantize, as {@link
 *     CommunicationQuantization#parse} reads it
 */
record TrainBenchSettings(
        int nproc,
        String sharding,
        int steps,
        int warmup,
        GptShape shape,
        String attention,
        String precision,
        Boolean reshardAfterForward,
        String activationCheckpointing,
        int loraRank,
        int shardGroupSize,
        String model,
        int intermediate,
        String communicationQuantization) {

    /** The {@code --sharding} value that runs DJL's plain trainer as the baseline. */
    static final String BASELINE = "NONE";

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @throws IllegalArgumentException naming the setting and what it must be
     */
    public void check() {
        if (BASELINE.equals(sharding)) {
            if (nproc != 1) {
                throw new IllegalArgumentException(
                        "--sharding NONE runs DJL's plain trainer on one process: use --nproc 1");
            }
        } else if (!Set.of(
                        "FULL_SHARD",
                        "SHARD_GRAD_OP",
                        "NO_SHARD",
                        "HYBRID_SHARD",
                        "HYBRID_SHARD_ZERO2")
                .contains(sharding)) {
            throw new IllegalArgumentException(
                    "--sharding must be FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD,"
                            + " HYBRID_SHARD_ZERO2 or NONE, got "
                            + sharding);
        }
        if (shardGroupSize != 0 && !isHybrid()) {
            throw new IllegalArgumentException(
                    "--shard-group-size is for --sharding HYBRID_SHARD or HYBRID_SHARD_ZERO2");
        }
        if (shardGroupSize < 0 || shardGroupSize > 0 && nproc % shardGroupSize != 0) {
            throw new IllegalArgumentException(
                    "--shard-group-size must divide --nproc " + nproc + ", got " + shardGroupSize);
        }
        boolean overridden = reshardAfterForward != null || activationCheckpointing != null;
        if (overridden && BASELINE.equals(sharding)) {
            throw new IllegalArgumentException(
                    "--reshard-after-forward and --activation-checkpointing set how FSDP shards;"
                            + " --sharding NONE runs DJL's plain trainer: drop them or pick an"
                            + " FSDP strategy");
        }
        if (Boolean.TRUE.equals(reshardAfterForward) && "NO_SHARD".equals(sharding)) {
            throw new IllegalArgumentException(
                    "--reshard-after-forward true needs split parameters: NO_SHARD splits"
                            + " nothing; use FULL_SHARD or SHARD_GRAD_OP");
        }
        if (nproc < 1 || steps < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "--nproc and --steps must be at least 1 and --warmup at least 0");
        }
        shape.check();
        checkpointing();
        BenchModel family = BenchModel.of(model);
        if (intermediate < 0 || intermediate > 0 && family == BenchModel.GPT2) {
            throw new IllegalArgumentException(
                    "--intermediate sets the MLP width of llama, mistral, qwen2 and qwen3 (GPT-2's"
                            + " is 4 x --width): give 0 or a positive width with one of those,"
                            + " got "
                            + intermediate
                            + " with --model "
                            + model);
        }
        try {
            AttentionKernel.of(attention);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--attention: " + e.getMessage(), e);
        }
        try {
            MixedPrecision.of(precision);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--precision: " + e.getMessage(), e);
        }
        if (BASELINE.equals(sharding) && MixedPrecision.of(precision).isMixed()) {
            throw new IllegalArgumentException(
                    "--sharding NONE (DJL's plain trainer) runs in float32 only: use --precision"
                            + " fp32");
        }
        if (quantization().isEnabled() && BASELINE.equals(sharding)) {
            throw new IllegalArgumentException(
                    "--sharding NONE (DJL's plain trainer) runs on one process, with nothing to"
                            + " send: drop --communication-quantization or pick an FSDP strategy");
        }
        if (loraRank < 0) {
            throw new IllegalArgumentException(
                    "--lora-rank must be 0 (no LoRA) or positive, got " + loraRank);
        }
    }

    /** Returns what the run's collectives quantize. */
    CommunicationQuantization quantization() {
        try {
            return CommunicationQuantization.parse(communicationQuantization);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "--communication-quantization: " + e.getMessage(), e);
        }
    }

    /** Returns whether the run shards within shard groups and replicates across them. */
    boolean isHybrid() {
        return sharding.startsWith("HYBRID_");
    }

    /** Returns whether units free their gathered parameters after forward in this run. */
    boolean reshardsAfterForward() {
        if (BASELINE.equals(sharding)) {
            return false;
        }
        return reshardAfterForward != null
                ? reshardAfterForward
                : ShardingStrategy.valueOf(sharding).isReshardAfterForward();
    }

    /** Returns the units recomputed in backward in this run (FsdpConfig's default unless told). */
    ActivationCheckpointing checkpointing() {
        if (BASELINE.equals(sharding)) {
            return ActivationCheckpointing.none();
        }
        if (activationCheckpointing == null) {
            return ActivationCheckpointing.defaultFor(reshardsAfterForward());
        }
        try {
            return ActivationCheckpointing.parse(activationCheckpointing);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--activation-checkpointing: " + e.getMessage(), e);
        }
    }

    /**
     * Returns the configuration of the model the run trains.
     *
     * @return the configuration
     */
    ModelConfig modelConfig() {
        return BenchModel.of(model).config(shape, intermediate);
    }

    /**
     * Returns the model FLOPs of training on one token ({@link BenchModel#flopsPerToken}).
     *
     * @return FLOPs per token
     */
    double modelFlopsPerToken() {
        return BenchModel.of(model).flopsPerToken(shape, intermediate);
    }
}
