package ai.djl.fsdp.zoo.lora;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.ndarray.NDManager;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A LoRA step on a 4-bit base under hybrid sharding, on 4 ranks as 2 "nodes" of 2 (the packed base
 * sharded within each pair, replicated across them), equals the same step under FULL_SHARD on the
 * same ranks: HYBRID_SHARD with recompute and without, and HYBRID_SHARD_ZERO2 (the hybrid
 * SHARD_GRAD_OP), for NF4 with double quantization and for FP4. The two compute the same step but
 * for the order the adapters' gradients are summed in (a reduce-scatter in each pair, then an
 * all-reduce across pairs): the loss within {@link #LOSS} relative, the adapters' update within
 * {@link #UPDATE} relative L2 (the hybrid bounds of the float LoRA checks, {@code
 * MixedPrecisionChecks}), the 4-bit base unchanged, and each rank holding half of the base.
 */
public final class QloraHybridChecks {

    /** The ranks of one shard group. */
    static final int SHARD_GROUP = 2;

    private static final String NAME = "llama-tiny";
    private static final int SEED = 43;
    private static final double LOSS = 1e-6;
    private static final double UPDATE = 1e-5;

    /** The most padding bytes a rank's shards hold beyond its share (a few per flat buffer). */
    private static final long PAD = 1024;

    private QloraHybridChecks() {}

    /**
     * Runs the checks on one rank of a 4-rank job described by the environment.
     *
     * @param args unused
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            run(group);
        }
        System.out.println("checks passed");
    }

    /**
     * Runs every case on {@code group}'s ranks.
     *
     * @param group the job's ranks, a multiple of {@link #SHARD_GROUP}
     */
    static void run(ProcessGroup group) {
        record Case(ShardingStrategy strategy, boolean recompute) {}
        List<Case> cases =
                List.of(
                        new Case(ShardingStrategy.HYBRID_SHARD, true),
                        new Case(ShardingStrategy.HYBRID_SHARD, false),
                        new Case(ShardingStrategy.HYBRID_SHARD_ZERO2, false));
        for (QuantConfig config :
                List.of(
                        QuantConfig.builder().setQuantType(QuantType.NF4).optNested(true).build(),
                        QuantConfig.builder().setQuantType(QuantType.FP4).build())) {
            for (Case c : cases) {
                hybridEqualsFullShard(config, c.strategy(), c.recompute(), group);
            }
        }
    }

    private static void hybridEqualsFullShard(
            QuantConfig config, ShardingStrategy strategy, boolean recompute, ProcessGroup group) {
        String what =
                config.getQuantType()
                        + (config.isNested() ? " nested " : " ")
                        + strategy
                        + (recompute ? " recompute" : " no recompute");
        try (Model full = Model.newInstance("full", Device.cpu());
                Model hybrid = Model.newInstance("hybrid", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM f = quantized(full, config);
            CausalLM h = quantized(hybrid, config);
            // Both start from f's adapters, B drawn non-zero so that A has a gradient too.
            QloraChecks.sameAdapters(f, h, manager);
            Map<String, float[]> frozenBefore = QloraChecks.values(h, false);
            Map<String, float[]> adaptersBefore = QloraChecks.values(h, true);
            QloraChecks.Step stepF =
                    QloraChecks.step(
                            full,
                            QloraChecks.fsdp(
                                            full,
                                            ShardingStrategy.FULL_SHARD,
                                            recompute,
                                            MixedPrecision.FP32)
                                    .build(),
                            group,
                            manager);
            QloraChecks.Step stepH =
                    QloraChecks.step(
                            hybrid,
                            QloraChecks.fsdp(hybrid, strategy, recompute, MixedPrecision.FP32)
                                    .optShardGroupSize(SHARD_GROUP)
                                    .build(),
                            group,
                            manager);
            double lossError = Math.abs(stepH.loss() - stepF.loss()) / Math.abs(stepF.loss());
            if (!(lossError <= LOSS)) {
                throw new AssertionError(what + ": loss " + stepH.loss() + " vs " + stepF.loss());
            }
            Map<String, float[]> adaptersF = QloraChecks.values(f, true);
            Map<String, float[]> adaptersH = QloraChecks.values(h, true);
            if (adaptersH.isEmpty() || !adaptersH.keySet().equals(adaptersF.keySet())) {
                throw new AssertionError(what + ": adapters " + adaptersH.keySet());
            }
            double worst = 0;
            for (String name : adaptersH.keySet()) {
                double error =
                        QloraChecks.updateError(
                                adaptersBefore.get(name), adaptersF.get(name), adaptersH.get(name));
                worst = Math.max(worst, error);
                if (!(error <= UPDATE)) {
                    throw new AssertionError(what + ": adapter " + name + " error " + error);
                }
            }
            Map<String, float[]> frozenAfter = QloraChecks.values(h, false);
            for (Map.Entry<String, float[]> entry : frozenBefore.entrySet()) {
                if (!Arrays.equals(entry.getValue(), frozenAfter.get(entry.getKey()))) {
                    throw new AssertionError(what + ": frozen " + entry.getKey() + " changed");
                }
            }
            // The base is sharded within each pair: half of it a rank, as on 2 ranks.
            ShardingStats stats = stepH.stats();
            long half = stats.unshardedParameterBytes() / SHARD_GROUP;
            if (Math.abs(stats.parameterBytes() - half) > PAD) {
                throw new AssertionError(what + ": sharded bytes " + stats);
            }
            System.out.printf(
                    "%s against FULL_SHARD on %d ranks: loss %.7f (relative difference %.1e),"
                            + " adapters' update error %.1e; parameter bytes per rank %d of %d%n",
                    what,
                    group.getSize(),
                    stepH.loss(),
                    lossError,
                    worst,
                    stats.parameterBytes(),
                    stats.unshardedParameterBytes());
        }
    }

    /** The 4-bit model with rank-4 adapters on every projection but the head. */
    private static CausalLM quantized(Model model, QuantConfig config) {
        CausalLM lm = TestModels.seeded(NAME, model.getNDManager(), SEED);
        Qlora.quantize(lm, config, Qlora.DEFAULT_SKIP);
        Lora.apply(lm, LoraBf16Checks.lora(4));
        model.setBlock(lm);
        return lm;
    }
}
