package ai.djl.fsdp.bench.train;

import ai.djl.fsdp.runtime.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.gpt2.GPT2Config;
import ai.djl.fsdp.zoo.nn.AttentionKernel;
import com.google.gson.JsonObject;
import java.util.Set;

/**
 * What the training benchmark runs.
 *
 * @param nproc ranks
 * @param sharding a {@code ShardingStrategy} name, or {@code NONE} for DJL's plain trainer
 * @param steps timed steps
 * @param warmup untimed steps first
 * @param layers GPT-2 blocks ({@code n_layer})
 * @param width hidden width ({@code n_embd})
 * @param heads attention heads ({@code n_head})
 * @param vocab vocabulary size ({@code vocab_size})
 * @param sequence tokens per sequence, also the model's {@code n_positions}
 * @param batch sequences per rank per step
 * @param attention the zoo's attention kernel, {@code explicit} or {@code sdpa}
 * @param precision the compute precision, {@code fp32}, {@code bf16} or {@code fp16}
 * @param reshardAfterForward whether units free their gathered parameters after forward; null for
 *     what the strategy does
 * @param activationCheckpointing whether units are recomputed in backward; null for what the
 *     strategy does
 * @param loraRank 0 to train every parameter; else the rank of LoRA adapters on every linear
 *     projection but the head ({@code all-linear}, alpha twice the rank), the base frozen
 */
public record TrainBenchSettings(
        int nproc,
        String sharding,
        int steps,
        int warmup,
        int layers,
        int width,
        int heads,
        int vocab,
        int sequence,
        int batch,
        String attention,
        String precision,
        Boolean reshardAfterForward,
        Boolean activationCheckpointing,
        int loraRank) {

    /**
     * Rejects settings the benchmark cannot run with, before any rank starts.
     *
     * @throws IllegalArgumentException naming the setting and what it must be
     */
    public void check() {
        if (TrainBenchRank.BASELINE.equals(sharding)) {
            if (nproc != 1) {
                throw new IllegalArgumentException(
                        "--sharding NONE runs DJL's plain trainer on one process: use --nproc 1");
            }
        } else if (!Set.of("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD").contains(sharding)) {
            throw new IllegalArgumentException(
                    "--sharding must be FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or NONE, got "
                            + sharding);
        }
        boolean overridden = reshardAfterForward != null || activationCheckpointing != null;
        if (overridden && TrainBenchRank.BASELINE.equals(sharding)) {
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
        if (layers < 1 || width < 1 || heads < 1 || vocab < 2 || sequence < 1 || batch < 1) {
            throw new IllegalArgumentException(
                    "--layers, --width, --heads, --seq and --batch must be positive, --vocab > 1");
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
        if (TrainBenchRank.BASELINE.equals(sharding) && MixedPrecision.of(precision).isMixed()) {
            throw new IllegalArgumentException(
                    "--sharding NONE (DJL's plain trainer) runs in float32 only: use --precision"
                            + " fp32");
        }
        if (loraRank < 0) {
            throw new IllegalArgumentException(
                    "--lora-rank must be 0 (no LoRA) or positive, got " + loraRank);
        }
        if (width % heads != 0) {
            throw new IllegalArgumentException(
                    "--width " + width + " must be a multiple of --heads " + heads);
        }
    }

    /** Returns whether units free their gathered parameters after forward in this run. */
    boolean reshardsAfterForward() {
        if (TrainBenchRank.BASELINE.equals(sharding)) {
            return false;
        }
        return reshardAfterForward != null
                ? reshardAfterForward
                : ShardingStrategy.valueOf(sharding).isReshardAfterForward();
    }

    /** Returns whether units are recomputed in backward in this run. */
    boolean recomputes() {
        if (TrainBenchRank.BASELINE.equals(sharding)) {
            return false;
        }
        return activationCheckpointing != null
                ? activationCheckpointing
                : ShardingStrategy.valueOf(sharding).isActivationCheckpointing();
    }

    /**
     * Returns the model FLOPs of training on one token: the matrix products of forward, three times
     * (backward computes two products per forward product). Forward per layer: {@code 24 C^2} (the
     * projections and the MLP) and {@code 4 T C} (scores and weighted values, counted in full
     * although causal attention needs half, as PaLM's model FLOPs utilization counts them); the
     * tied head {@code 2 C V}. Recompute is not counted: these are the model's FLOPs, not the
     * hardware's.
     *
     * @return FLOPs per token
     */
    double modelFlopsPerToken() {
        double c = width;
        double perLayer = 24 * c * c + 4.0 * sequence * c;
        return 3 * (layers * perLayer + 2 * c * vocab);
    }

    /**
     * Returns the model-zoo GPT-2 configuration these settings describe. Dropout is off: it would
     * add random-mask work that does not depend on the sharding, and the baseline and FSDP runs
     * should compute the same function.
     */
    public GPT2Config modelConfig() {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", GPT2Config.MODEL_TYPE);
        json.addProperty("vocab_size", vocab);
        json.addProperty("n_positions", sequence);
        json.addProperty("n_embd", width);
        json.addProperty("n_layer", layers);
        json.addProperty("n_head", heads);
        json.addProperty("resid_pdrop", 0f);
        json.addProperty("embd_pdrop", 0f);
        json.addProperty("attn_pdrop", 0f);
        return GPT2Config.fromJson(json);
    }
}
