package ai.djl.fsdp.zoo.lora;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraConfig;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpConfig;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.trainer.FullyShardedDataParallel;
import ai.djl.fsdp.trainer.TrainerOptions;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.ShardedSave;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The merged output of a LoRA-adapted 4-bit base written under FSDP ({@link ShardedSave#merged},
 * one unit at a time) is a plain float checkpoint: stored as float32, each weight equals the 4-bit
 * weight decoded independently ({@link QuantizedWeight#dequantize}) plus the adapter's update
 * merged into a float model, bit for bit, and the checkpoint loaded back as a float model computes
 * the 4-bit model's logits within {@link #LOGITS} (the products' rounding: {@code x (W + BA)}
 * against {@code x W + (x A) B}); stored as bfloat16 it lies within bfloat16's rounding of them, as
 * the line the save returns says. For NF4 with double quantization adapting the attention's query
 * and value (the MLP's 4-bit weights decoded without an adapter), and FP4 adapting every linear, on
 * the ranks of the job that runs it.
 */
public final class QloraMergeChecks {

    private static final String NAME = "llama-tiny";
    private static final int SEED = 41;

    /** The largest difference of a logit of the merged float model from the 4-bit model's. */
    private static final float LOGITS = 5e-6f;

    /**
     * bfloat16's largest relative rounding: half a unit in the last of its 8 significant bits, at
     * most 2^-8 of the value.
     */
    private static final double BF16_ROUNDING = Math.pow(2, -8);

    private QloraMergeChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args a directory every rank sees, for the outputs
     * @throws IOException if writing or reading fails
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            run(group, Path.of(args[0]));
        }
        System.out.println("checks passed");
    }

    /**
     * Merges and checks both cases on {@code group}'s ranks.
     *
     * @param group the job's ranks
     * @param directory a directory every rank sees
     * @throws IOException if writing or reading fails
     */
    static void run(ProcessGroup group, Path directory) throws IOException {
        QuantConfig nf4 = QuantConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();
        QuantConfig fp4 = QuantConfig.builder().setQuantType(QuantType.FP4).build();
        check(group, directory, nf4, List.of("q_proj", "v_proj"));
        check(group, directory, fp4, List.of(LoraConfig.ALL_LINEAR));
    }

    private static void check(
            ProcessGroup group, Path directory, QuantConfig quant, List<String> targets)
            throws IOException {
        LoraConfig lora =
                LoraConfig.builder().setTargetModules(targets).optRank(4).optAlpha(8).build();
        String what = quant.getQuantType() + (quant.isNested() ? " nested " : " ") + targets;
        Path f32 = directory.resolve(quant.getQuantType() + "-f32-" + group.getSize());
        Path bf16 = directory.resolve(quant.getQuantType() + "-bf16-" + group.getSize());
        try (Model model = Model.newInstance("qlora-merge", Device.cpu());
                NDManager manager = TestModels.newManager()) {
            CausalLM q = TestModels.seeded(NAME, model.getNDManager(), SEED);
            Qlora.quantize(q, quant, Qlora.DEFAULT_SKIP);
            Lora.apply(q, lora);
            drawAdapters(q);
            NDArray ids = TestModels.tokens(manager, 2, 12, SEED + 1);
            NDArray expected = TestModels.logits(q, ids, null);
            model.setBlock(q);
            Optional<String> f32Line;
            Optional<String> bf16Line;
            try (FsdpTrainer trainer =
                    FullyShardedDataParallel.newTrainer(
                            model,
                            TestModels.trainingConfig(),
                            group,
                            FsdpConfig.builder().optWrapPolicy(TestModels.decoderLayers(q)).build(),
                            TrainerOptions.builder().optGatherOnClose(false).build())) {
                long most = HfCheckpoint.DEFAULT_MAX_SHARD_BYTES;
                f32Line = ShardedSave.merged(trainer, q, f32, Dtype.F32, most);
                bf16Line = ShardedSave.merged(trainer, q, bf16, Dtype.BF16, most);
            }
            if (group.getRank() != 0) {
                if (f32Line.isPresent() || bf16Line.isPresent()) {
                    throw new AssertionError(what + ": a line on rank " + group.getRank());
                }
                group.barrier();
                return;
            }
            String line = f32Line.orElseThrow();
            if (!line.contains("each equals the trained 4-bit weight")) {
                throw new AssertionError(what + ": " + line);
            }
            Reference reference = mergedReference(quant, lora);
            CausalLM loaded = Models.load(f32, manager);
            storedPlain(f32, Dtype.F32, reference.values().size());
            for (Map.Entry<String, Parameter> entry : StateDict.parameters(loaded).entrySet()) {
                float[] stored = entry.getValue().getArray().toFloatArray();
                if (!Arrays.equals(reference.values().get(entry.getKey()), stored)) {
                    throw new AssertionError(what + ": merged " + entry.getKey());
                }
            }
            float logits = TestModels.maxDiff(expected, TestModels.logits(loaded, ids, null));
            if (!(logits <= LOGITS)) {
                throw new AssertionError(what + ": logits differ by " + logits);
            }
            double relative = bf16Relative(bf16, reference, what);
            String rounded = bf16Line.orElseThrow();
            Matcher said = Pattern.compile("relative L2 (\\S+)\\)").matcher(rounded);
            if (!rounded.contains("bfloat16's rounding")
                    || !said.find()
                    || !(Math.abs(Double.parseDouble(said.group(1)) / relative - 1) < 0.01)) {
                throw new AssertionError(what + ": " + rounded + ", measured " + relative);
            }
            System.out.printf(
                    "%s on %d ranks: merged float32 logits within %.1e of the 4-bit model's;"
                            + " %s%n",
                    what, group.getSize(), logits, rounded);
            group.barrier();
        }
    }

    /** Gives every adapter the same values on every rank, B non-zero. */
    private static void drawAdapters(CausalLM lm) {
        Random random = new Random(SEED + 2);
        for (LoraLinear adapter : Lora.adapters(lm).values()) {
            for (Parameter parameter : List.of(adapter.getLoraA(), adapter.getLoraB())) {
                NDArray array = parameter.getArray();
                float[] values = new float[Math.toIntExact(array.size())];
                for (int i = 0; i < values.length; i++) {
                    values[i] = (float) (random.nextGaussian() * 0.05);
                }
                array.set(values);
            }
        }
    }

    /**
     * The merged model computed apart: the float model's projections replaced by their 4-bit
     * weights decoded in Java, the same adapters, merged in place.
     */
    private static Reference mergedReference(QuantConfig quant, LoraConfig lora) {
        try (NDManager manager = TestModels.newManager()) {
            CausalLM f = TestModels.seeded(NAME, manager, SEED);
            Map<String, Parameter> floats = StateDict.parameters(f);
            Set<String> decoded = new HashSet<>();
            try (NDManager scratch = TestModels.newManager()) {
                CausalLM shape = TestModels.seeded(NAME, scratch, SEED);
                for (String path : Qlora.quantize(shape, quant, Qlora.DEFAULT_SKIP)) {
                    decoded.add(path + ".weight");
                    NDArray weight = floats.get(path + ".weight").getArray();
                    weight.set(
                            QuantizedWeight.quantize(
                                            weight.toFloatArray(),
                                            weight.getShape().getShape(),
                                            quant)
                                    .dequantize());
                }
            }
            Lora.apply(f, lora);
            drawAdapters(f);
            Lora.merge(f);
            Map<String, float[]> values = new TreeMap<>();
            StateDict.parameters(f)
                    .forEach((name, p) -> values.put(name, p.getArray().toFloatArray()));
            return new Reference(values, decoded);
        }
    }

    /** The merged model's values by name, and the names of the weights held in 4 bits. */
    private record Reference(Map<String, float[]> values, Set<String> decoded) {}

    /** The checkpoint holds only plain tensors of the type asked for, and no 4-bit settings. */
    private static void storedPlain(Path checkpoint, Dtype type, int tensors) throws IOException {
        String config = Files.readString(checkpoint.resolve(ConfigJson.FILE));
        if (config.contains(QuantizationConfig.KEY)) {
            throw new AssertionError(checkpoint + ": config.json names a quantization");
        }
        try (SafetensorsCheckpoint stored = SafetensorsCheckpoint.open(checkpoint)) {
            if (stored.names().size() != tensors) {
                throw new AssertionError(checkpoint + ": " + stored.names());
            }
            for (String name : stored.names()) {
                if (stored.info(name).dtype() != type) {
                    throw new AssertionError(checkpoint + ": " + name + " is not " + type);
                }
            }
        }
    }

    /**
     * The bfloat16 output's weights each lie within bfloat16's rounding of the float32 reference;
     * returns their relative L2 difference over the weights held in 4 bits.
     */
    private static double bf16Relative(Path checkpoint, Reference reference, String what)
            throws IOException {
        storedPlain(checkpoint, Dtype.BF16, reference.values().size());
        double difference = 0;
        double norm = 0;
        try (NDManager manager = TestModels.newManager();
                SafetensorsCheckpoint stored = SafetensorsCheckpoint.open(checkpoint)) {
            for (String name : stored.names()) {
                float[] exact = reference.values().get(name);
                float[] rounded = stored.read(manager, name).toFloatArray();
                boolean quantized = reference.decoded().contains(name);
                for (int i = 0; i < exact.length; i++) {
                    double error = Math.abs(rounded[i] - exact[i]);
                    if (error > BF16_ROUNDING * Math.abs(exact[i])) {
                        throw new AssertionError(
                                what
                                        + ": bf16 "
                                        + name
                                        + " at "
                                        + i
                                        + ": "
                                        + rounded[i]
                                        + " for "
                                        + exact[i]);
                    }
                    if (quantized) {
                        difference += error * error;
                        norm += (double) exact[i] * exact[i];
                    }
                }
            }
        }
        return Math.sqrt(difference / norm);
    }
}
