package ai.djl.fsdp.zoo.lora;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.DynamicMap;
import ai.djl.fsdp.quant.NestedScales;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.ActivationCheckpointing;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.MixedPrecision;
import ai.djl.fsdp.trainer.ShardingStats;
import ai.djl.fsdp.trainer.ShardingStrategy;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.sharded.CausalLmLoss;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A LoRA step on a 4-bit base under FSDP equals, bit for bit, the same step on a float base holding
 * the dequantized weights (decoded independently, by {@link QuantizedWeight}): the loss, the
 * adapters after one SGD step (their gradients, times the learning rate) and the base, which comes
 * back unchanged. For NF4 and FP4, with and without double quantization, under FULL_SHARD with and
 * without recompute (with it in float32 and in bfloat16 mixed precision) and SHARD_GRAD_OP, on the
 * ranks of the job that runs it; and on a model whose head is tied to its embedding ({@code
 * qwen2-tiny}, nested NF4), whose head stays float, one weight with the embedding, even with an
 * empty skip list.
 */
public final class QloraChecks {

    private static final String NAME = "llama-tiny";
    private static final int SEED = 31;

    /** A model whose head is tied to its token embedding (and whose q, k, v have biases). */
    private static final String TIED = "qwen2-tiny";

    private static final String TIED_EMBEDDING = "model.embed_tokens.weight";

    /** The most padding bytes a rank's shards hold beyond its share (a few per flat buffer). */
    private static final long PAD = 1024;

    /**
     * Under bfloat16 the two bases hold the same bfloat16 weights, but a product over a gathered
     * buffer's view and one over a decoded array may take different kernel paths (accumulation
     * order): the loss within this relative bound, the adapters' update within {@link #BF16_UPDATE}
     * (relative L2); float32 is exact.
     */
    private static final double BF16_LOSS = 1e-4;

    private static final double BF16_UPDATE = LoraBf16Checks.UPDATE_TOLERANCE;

    private QloraChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
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
     * Runs every combination on {@code group}'s ranks.
     *
     * @param group the job's ranks
     */
    static void run(ProcessGroup group) {
        for (QuantType type : QuantType.values()) {
            for (boolean nested : new boolean[] {false, true}) {
                QuantConfig config =
                        QuantConfig.builder().setQuantType(type).optNested(nested).build();
                for (MixedPrecision precision : List.of(MixedPrecision.FP32, MixedPrecision.BF16)) {
                    stepEqualsDequantizedFloatBase(
                            NAME, config, ShardingStrategy.FULL_SHARD, true, precision, group);
                }
                stepEqualsDequantizedFloatBase(
                        NAME,
                        config,
                        ShardingStrategy.FULL_SHARD,
                        false,
                        MixedPrecision.FP32,
                        group);
                stepEqualsDequantizedFloatBase(
                        NAME,
                        config,
                        ShardingStrategy.SHARD_GRAD_OP,
                        false,
                        MixedPrecision.FP32,
                        group);
            }
        }
        QuantConfig nested =
                QuantConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
        tiedHeadStaysFloat(nested);
        stepEqualsDequantizedFloatBase(
                TIED, nested, ShardingStrategy.FULL_SHARD, true, MixedPrecision.FP32, group);
    }

    /**
     * A head tied to the token embedding is not quantized, even where the skip list does not name
     * it: it stays one float parameter with the embedding, its values untouched.
     */
    private static void tiedHeadStaysFloat(QuantConfig config) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(TIED, manager, SEED);
            Parameter embedding = StateDict.parameters(lm).get(TIED_EMBEDDING);
            float[] before = embedding.getArray().toFloatArray();
            List<String> quantized = Qlora.quantize(lm, config, List.of());
            Parameter head = StateDict.modules(lm).get("lm_head").getParameters().get("weight");
            if (quantized.contains("lm_head")
                    || quantized.size() != 14
                    || head != embedding
                    || !Arrays.equals(before, head.getArray().toFloatArray())) {
                throw new AssertionError("the tied head was quantized: " + quantized);
            }
        }
        System.out.println(TIED + ": the tied head stays float with an empty skip list");
    }

    private static void stepEqualsDequantizedFloatBase(
            String model,
            QuantConfig config,
            ShardingStrategy strategy,
            boolean recompute,
            MixedPrecision precision,
            ProcessGroup group) {
        String what = model + " " + config.getQuantType() + (config.isNested() ? " nested " : " ");
        what += strategy;
        what += (recompute ? " recompute " : " no recompute ") + precision;
        try (Model quantized = Model.newInstance("q", Device.cpu());
                Model reference = Model.newInstance("f", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM q = TestModels.seeded(model, quantized.getNDManager(), SEED);
            CausalLM f = TestModels.seeded(model, reference.getNDManager(), SEED);
            Map<String, Parameter> floats = StateDict.parameters(f);
            long saved = 0;
            for (String path : Qlora.quantize(q, config, Qlora.DEFAULT_SKIP)) {
                NDArray weight = floats.get(path + ".weight").getArray();
                saved += 4 * weight.size() - quantizedBytes(weight.size(), config);
                float[] decoded =
                        QuantizedWeight.quantize(
                                        weight.toFloatArray(), weight.getShape().getShape(), config)
                                .dequantize();
                weight.set(decoded);
            }
            Lora.apply(q, LoraBf16Checks.lora(4));
            Lora.apply(f, LoraBf16Checks.lora(4));
            sameAdapters(q, f, manager);
            quantized.setBlock(q);
            reference.setBlock(f);
            Map<String, float[]> frozenBefore = values(q, false);
            Map<String, float[]> adaptersBefore = values(q, true);
            Step stepQ = step(quantized, strategy, recompute, precision, group, manager);
            Step stepF = step(reference, strategy, recompute, precision, group, manager);
            boolean exact = precision == MixedPrecision.FP32;
            double lossError = Math.abs(stepQ.loss() - stepF.loss()) / Math.abs(stepF.loss());
            if (exact ? stepQ.loss() != stepF.loss() : !(lossError <= BF16_LOSS)) {
                throw new AssertionError(what + ": loss " + stepQ.loss() + " vs " + stepF.loss());
            }
            // The base is sharded packed; only the adapters have gradients and optimizer state.
            ShardingStats q4 = stepQ.stats();
            ShardingStats f32 = stepF.stats();
            if (q4.gradientBytes() != f32.gradientBytes()
                    || q4.optimizerStateBytes() != f32.optimizerStateBytes()
                    || q4.unshardedParameterBytes() != f32.unshardedParameterBytes() - saved
                    || q4.parameterBytes() > q4.unshardedParameterBytes() / group.getSize() + PAD) {
                throw new AssertionError(what + ": sharded bytes " + q4 + " vs " + f32);
            }
            Map<String, float[]> adaptersQ = values(q, true);
            Map<String, float[]> adaptersF = values(f, true);
            if (adaptersQ.isEmpty() || !adaptersQ.keySet().equals(adaptersF.keySet())) {
                throw new AssertionError(what + ": adapters " + adaptersQ.keySet());
            }
            double worst = 0;
            for (String name : adaptersQ.keySet()) {
                float[] actual = adaptersQ.get(name);
                float[] expected = adaptersF.get(name);
                double error = updateError(adaptersBefore.get(name), expected, actual);
                worst = Math.max(worst, error);
                if (exact ? !Arrays.equals(expected, actual) : !(error <= BF16_UPDATE)) {
                    throw new AssertionError(what + ": adapter " + name + " error " + error);
                }
            }
            Map<String, float[]> frozenAfter = values(q, false);
            for (String name : frozenBefore.keySet()) {
                // Under bfloat16 the frozen floats come back as their bfloat16 rounding (codes,
                // integers to 255, round to themselves).
                float[] before = frozenBefore.get(name);
                float[] expected = exact ? before : LoraBf16Checks.bf16Rounded(before);
                if (!Arrays.equals(expected, frozenAfter.get(name))) {
                    throw new AssertionError(what + ": frozen " + name + " changed");
                }
            }
            System.out.printf(
                    "%s: loss %.7f (relative difference %.1e), adapters' update error %.1e;"
                            + " parameter bytes per rank 4-bit %d, float %d%n",
                    what,
                    stepQ.loss(),
                    lossError,
                    worst,
                    q4.parameterBytes(),
                    f32.parameterBytes());
        }
    }

    /** Gives both models the same adapters, B drawn non-zero so that A has a gradient too. */
    static void sameAdapters(CausalLM q, CausalLM f, NDManager manager) {
        Map<String, LoraLinear> to = Lora.adapters(f);
        for (Map.Entry<String, LoraLinear> entry : Lora.adapters(q).entrySet()) {
            LoraLinear from = entry.getValue();
            NDArray b = from.getLoraB().getArray();
            b.addi(manager.randomNormal(0, 0.05f, b.getShape(), b.getDataType()));
            LoraLinear target = to.get(entry.getKey());
            target.getLoraA().getArray().set(from.getLoraA().getArray().toFloatArray());
            target.getLoraB().getArray().set(b.toFloatArray());
        }
    }

    /** The relative L2 distance of two updates from {@code start}: 0 when they are equal. */
    static double updateError(float[] start, float[] expected, float[] actual) {
        double difference = 0;
        double update = 0;
        for (int i = 0; i < start.length; i++) {
            difference += Math.pow(actual[i] - expected[i], 2);
            update += Math.pow(expected[i] - start[i], 2);
        }
        return difference == 0 ? 0 : Math.sqrt(difference / update);
    }

    /** bitsandbytes' bytes for a weight of {@code count} values: codes, map and scales. */
    private static long quantizedBytes(long count, QuantConfig config) {
        long blocks = (count + config.getBlockSize() - 1) / config.getBlockSize();
        long scales = 4 * blocks;
        if (config.isNested()) {
            long nestedBlocks = (blocks + NestedScales.BLOCK_SIZE - 1) / NestedScales.BLOCK_SIZE;
            scales = blocks + 4 * nestedBlocks + 4 * DynamicMap.SIZE + 4;
        }
        return (count + 1) / 2 + 4 * 16 + scales;
    }

    /** A step's loss and what the ranks held. */
    record Step(double loss, ShardingStats stats) {}

    /** One SGD step under FSDP; closing the trainer gathers the parameters back into the model. */
    private static Step step(
            Model model,
            ShardingStrategy strategy,
            boolean recompute,
            MixedPrecision precision,
            ProcessGroup group,
            NDManager manager) {
        return step(model, fsdp(model, strategy, recompute, precision).build(), group, manager);
    }

    /** The FSDP settings of a step: each decoder layer a unit. */
    static FsdpConfig.Builder fsdp(
            Model model, ShardingStrategy strategy, boolean recompute, MixedPrecision precision) {
        return FsdpConfig.builder()
                .optShardingStrategy(strategy)
                .optMixedPrecision(precision)
                .optActivationCheckpointing(ActivationCheckpointing.of(recompute))
                .optWrapPolicy(TestModels.decoderLayers((CausalLM) model.getBlock()));
    }

    /**
     * One SGD step (learning rate 0.5) on each rank's batch under {@code fsdp}; closing the trainer
     * gathers the parameters back into the model.
     */
    static Step step(Model model, FsdpConfig fsdp, ProcessGroup group, NDManager manager) {
        DefaultTrainingConfig training =
                new DefaultTrainingConfig(new CausalLmLoss())
                        .optOptimizer(
                                Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.5f)).build())
                        .optDevices(new Device[] {Device.cpu()});
        try (FsdpTrainer trainer =
                FullyShardedDataParallel.newTrainer(
                        model, training, group, fsdp, TrainerOptions.builder().build())) {
            double loss = LoraBf16Checks.step(trainer, manager, SEED + 1 + group.getRank());
            return new Step(loss, trainer.getShardingStats());
        }
    }

    /** The adapters' values, or the other parameters' (as floats: codes widen exactly). */
    static Map<String, float[]> values(CausalLM lm, boolean adapters) {
        Map<String, float[]> values = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : lm.getParameters()) {
            if (pair.getKey().contains("lora_") == adapters) {
                NDArray array = pair.getValue().getArray();
                values.putIfAbsent(
                        pair.getKey(), array.toType(DataType.FLOAT32, false).toFloatArray());
            }
        }
        return values;
    }
}
