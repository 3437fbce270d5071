package ai.djl.fsdp.zoo.precision;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.trainer.WrapPolicy;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One training step of GPT-2 and Llama in bfloat16 and in float16 mixed precision (the latter
 * through the trainer's loss scaler) against the same step in float32, in every strategy, with and
 * without LoRA: the loss within a relative tolerance and each parameter's update within another
 * (relative L2 of the difference of the updates to the float32 update). The 16-bit steps leave the
 * head's product to the loss ({@code CausalLM.setFusedLossHead}), the float32 one computes whole
 * logits, so the bounds hold across both ways of computing the loss. SGD makes the update
 * proportional to the gradient, so the second bound is the gradient's error.
 */
final class MixedPrecisionChecks {

    /**
     * The bounds of a precision.
     *
     * @param precision the mixed precision checked against float32
     * @param loss the relative error of the loss
     * @param update the relative L2 error of each parameter's update
     */
    record Tolerance(MixedPrecision precision, double loss, double update) {}

    /**
     * bfloat16 keeps 8 significant bits (relative rounding 2^-9, about 2e-3 per operation); float16
     * keeps 11 (2^-12, about 2.4e-4), so its bounds are 5x tighter.
     */
    static final List<Tolerance> TOLERANCES =
            List.of(
                    new Tolerance(MixedPrecision.BF16, 1e-2, 5e-2),
                    new Tolerance(MixedPrecision.FP16, 2e-3, 1e-2));

    private static final int SEED = 11;

    /** The shard group of the hybrid checks: 4 ranks as 2 "nodes" of 2. */
    static final int HYBRID_SHARD_GROUP = 2;

    /**
     * Hybrid sharding against FULL_SHARD on the same ranks computes the same step but for the order
     * the gradients are summed in (a reduce-scatter in each shard group, then an all-reduce across
     * them): float32 rounding of the gradient, far below these bounds (measured: see {@link
     * #runHybrid}'s output).
     */
    private static final double HYBRID_LOSS_BOUND = 1e-6;

    private static final double HYBRID_UPDATE_BOUND = 1e-5;

    private MixedPrecisionChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args none
     */
    public static void main(String[] args) {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            if (args.length > 0 && "hybrid".equals(args[0])) {
                runHybrid(group);
            } else {
                runAll(group);
            }
        }
        System.out.println("checks passed");
    }

    static void runAll(ProcessGroup group) {
        for (String name : List.of("gpt2-tiny", "llama-tiny")) {
            for (ShardingStrategy strategy : ShardingStrategy.values()) {
                if (strategy.isHybrid()) {
                    continue; // HybridShardingTest
                }
                for (boolean withLora : new boolean[] {false, true}) {
                    String what = name + " " + strategy + (withLora ? " LoRA" : "");
                    Step fp32 = step(name, strategy, withLora, MixedPrecision.FP32, group);
                    Set<Long> halfSent = new HashSet<>();
                    // float16's loss scaler all-reduces one float per step to agree on overflow.
                    long agreement = 2L * Float.BYTES * (group.getSize() - 1) / group.getSize();
                    for (Tolerance tolerance : TOLERANCES) {
                        Step mixed = step(name, strategy, withLora, tolerance.precision(), group);
                        compare(what, tolerance, fp32, mixed);
                        boolean scaled = tolerance.precision().needsLossScaling();
                        halfSent.add(mixed.sent() - (scaled ? agreement : 0));
                    }
                    checkSent(what, strategy, group, fp32.sent(), halfSent);
                }
            }
        }
    }

    /**
     * One step of GPT-2 with HYBRID_SHARD on LoRA adapters in float32, and with HYBRID_SHARD_ZERO2
     * in bfloat16, each against FULL_SHARD on the same ranks: the same loss and updates within
     * float32 rounding.
     */
    static void runHybrid(ProcessGroup group) {
        record Case(ShardingStrategy strategy, boolean withLora, MixedPrecision precision) {}
        for (Case c :
                List.of(
                        new Case(ShardingStrategy.HYBRID_SHARD, true, MixedPrecision.FP32),
                        new Case(
                                ShardingStrategy.HYBRID_SHARD_ZERO2, false, MixedPrecision.BF16))) {
            String what =
                    "gpt2-tiny "
                            + c.strategy()
                            + (c.withLora() ? " LoRA " : " ")
                            + c.precision().param().getName()
                            + " against FULL_SHARD";
            Step full =
                    step(
                            "gpt2-tiny",
                            ShardingStrategy.FULL_SHARD,
                            c.withLora(),
                            c.precision(),
                            group);
            Step hybrid = step("gpt2-tiny", c.strategy(), c.withLora(), c.precision(), group);
            compare(
                    what,
                    new Tolerance(c.precision(), HYBRID_LOSS_BOUND, HYBRID_UPDATE_BOUND),
                    full,
                    hybrid);
        }
    }

    /** The loss of a step, the parameters before it and after it, the bytes this rank sent. */
    private record Step(
            double loss, Map<String, float[]> before, Map<String, float[]> after, long sent) {}

    private static Step step(
            String name,
            ShardingStrategy strategy,
            boolean withLora,
            MixedPrecision precision,
            ProcessGroup group) {
        try (Model model = Model.newInstance(name, Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(name, model.getNDManager(), SEED);
            if (withLora) {
                Lora.apply(lm, lora());
            }
            // The 16-bit steps compute the head's product in the loss, chunk by chunk, against
            // float32 from whole logits.
            lm.setFusedLossHead(precision.isMixed());
            model.setBlock(lm);
            Map<String, float[]> before = trainable(lm);
            double loss;
            long sent;
            try (FsdpTrainer trainer =
                            newTrainer(
                                    model,
                                    strategy,
                                    precision,
                                    group,
                                    TrainerOptions.builder().build());
                    NDManager scope = manager.newSubManager()) {
                NDArray tokens = TestModels.tokens(scope, 2, 13, SEED + 2 + group.getRank());
                NDList inputs = new NDList(tokens.get(":, 0:12"));
                NDList labels = new NDList(tokens.get(":, 1:13"));
                try (GradientCollector collector = trainer.newGradientCollector()) {
                    NDList outputs = trainer.forward(inputs, labels);
                    NDArray value = trainer.getLoss().evaluate(labels, outputs);
                    loss = value.getFloat();
                    collector.backward(value);
                }
                trainer.step();
                sent = trainer.getShardingStats().sentBytesLastStep();
            } // closing gathers the trained parameters into the model
            return new Step(loss, before, trainable(lm), sent);
        }
    }

    /**
     * Both 16-bit types gather the same bytes (beside the loss scaler's float), fewer than float32
     * when parameters are gathered across ranks; gradients are reduced in float32 in every
     * precision.
     */
    private static void checkSent(
            String what, ShardingStrategy strategy, ProcessGroup group, long fp32, Set<Long> half) {
        boolean gathers = group.getSize() > 1 && strategy != ShardingStrategy.NO_SHARD;
        long sent = half.iterator().next();
        if (half.size() != 1 || (gathers ? sent >= fp32 : sent != fp32)) {
            throw new AssertionError(what + ": sent " + half + " bytes in 16 bits, " + fp32);
        }
    }

    private static void compare(String what, Tolerance tolerance, Step fp32, Step mixed) {
        String type = tolerance.precision().param().getName();
        double lossError = Math.abs(mixed.loss() - fp32.loss()) / Math.abs(fp32.loss());
        if (!(lossError <= tolerance.loss())) {
            throw new AssertionError(
                    what + ": " + type + " loss " + mixed.loss() + " vs fp32 " + fp32.loss());
        }
        double worst = 0;
        for (Map.Entry<String, float[]> entry : fp32.after().entrySet()) {
            float[] start = fp32.before().get(entry.getKey());
            float[] expected = entry.getValue();
            float[] actual = mixed.after().get(entry.getKey());
            double difference = 0;
            double update = 0;
            for (int i = 0; i < start.length; i++) {
                difference += Math.pow(actual[i] - expected[i], 2);
                update += Math.pow(expected[i] - start[i], 2);
            }
            if (update == 0) {
                continue; // LoRA's B starts at zero and A receives no gradient in the first step
            }
            double error = Math.sqrt(difference / update);
            worst = Math.max(worst, error);
            if (!(error <= tolerance.update())) {
                throw new AssertionError(
                        what
                                + ": "
                                + type
                                + " update of "
                                + entry.getKey()
                                + " relative error "
                                + error);
            }
        }
        System.out.printf(
                "%s: loss fp32 %.6f %s %.6f (rel %.1e), worst update error %.1e%n",
                what, fp32.loss(), type, mixed.loss(), lossError, worst);
    }

    static Map<String, float[]> trainable(CausalLM lm) {
        Map<String, float[]> values = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : lm.getParameters()) {
            if (pair.getValue().requiresGradient()) {
                values.put(pair.getKey(), pair.getValue().getArray().toFloatArray());
            }
        }
        return values;
    }

    private static LoraConfig lora() {
        return LoraConfig.builder()
                .setTargetModules(List.of(LoraConfig.ALL_LINEAR))
                .optRank(4)
                .optAlpha(8)
                .build();
    }

    /**
     * A trainer of {@code model} with SGD at a learning rate of 0.5 and the model's layers as
     * units.
     */
    static FsdpTrainer newTrainer(
            Model model,
            ShardingStrategy strategy,
            MixedPrecision precision,
            ProcessGroup group,
            TrainerOptions options) {
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optOptimizer(
                                Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.5f)).build())
                        .optDevices(new Device[] {Device.cpu()});
        FsdpConfig.Builder fsdp =
                FsdpConfig.builder()
                        .optShardingStrategy(strategy)
                        .optMixedPrecision(precision)
                        .optWrapPolicy(
                                WrapPolicy.byLayerClass(
                                        ((CausalLM) model.getBlock())
                                                .decoderLayerClass()
                                                .getSimpleName()));
        if (strategy.isHybrid()) {
            fsdp.optShardGroupSize(HYBRID_SHARD_GROUP);
        }
        return FullyShardedDataParallel.newTrainer(model, config, group, fsdp.build(), options);
    }
}
