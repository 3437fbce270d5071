package ai.djl.fsdp.zoo.lora;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.dist.DistributedEnv;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ProcessGroups;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.trainer.FsdpTrainer;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.fsdp.zoo.sharded.ShardedStart;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * A 4-bit base started sharded from a float checkpoint ({@link ShardedStart}: each rank reads and
 * quantizes only the blocks its shards cover, nested scales from the whole weight) holds exactly
 * what quantizing the whole model at once gives: every packed byte, scale and float parameter. So
 * does one started from a pre-quantized checkpoint of it ({@link PrequantizedCheckpoints}: each
 * rank reading its shards' stored bytes, nothing quantized again), and one started from the same
 * weights stored as float16 (widened exactly, then quantized).
 */
public final class QloraStartChecks {

    static final String NAME = "llama-tiny";
    static final int SEED = 37;

    /** The float16 checkpoint's directory. */
    private static final String FLOAT16 = "float16";

    private QloraStartChecks() {}

    /**
     * Runs the checks on one rank of a job described by the environment.
     *
     * @param args the directory {@link #write} wrote
     * @throws IOException if the checkpoint cannot be read
     */
    public static void main(String[] args) throws IOException {
        try (ProcessGroup group = ProcessGroups.init(DistributedEnv.fromEnvironment())) {
            run(group, Path.of(args[0]));
        }
        System.out.println("checks passed");
    }

    /**
     * Writes {@link #NAME} drawn from {@link #SEED} in float32 ({@code float}) and pre-quantized in
     * every 4-bit form, the nested NF4 one's bytes labelled bfloat16.
     *
     * @param directory the directory to write them in
     * @throws IOException if writing fails
     */
    static void write(Path directory) throws IOException {
        Path checkpoint = directory.resolve("float");
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = TestModels.seeded(NAME, manager, SEED);
            HfCheckpoint.save(lm, checkpoint);
            // The same weights stored as float16, as Llama 2's files are.
            Path half = Files.createDirectories(directory.resolve(FLOAT16));
            SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
            StateDict.parameters(lm)
                    .forEach(
                            (name, parameter) ->
                                    writer.add(
                                            name,
                                            parameter.getArray().toType(DataType.FLOAT16, false)));
            writer.writeCheckpoint(half, HfCheckpoint.DEFAULT_MAX_SHARD_BYTES);
            ConfigJson.write(lm.getConfig(), half, "float16");
        }
        for (QuantType type : QuantType.values()) {
            for (boolean nested : new boolean[] {false, true}) {
                PrequantizedCheckpoints.write(
                        checkpoint, config(type, nested), directory.resolve(packed(type, nested)));
            }
        }
    }

    /**
     * Starts the model from the float checkpoint and from the pre-quantized ones in every 4-bit
     * form and compares it.
     *
     * @param group the job's ranks
     * @param directory the directory {@link #write} wrote
     * @throws IOException if the checkpoint cannot be read
     */
    static void run(ProcessGroup group, Path directory) throws IOException {
        Path checkpoint = directory.resolve("float");
        for (QuantType type : QuantType.values()) {
            for (boolean nested : new boolean[] {false, true}) {
                QuantizationConfig quantization = config(type, nested);
                Map<String, float[]> expected;
                try (NDManager manager = TestModels.newManager()) {
                    CausalLM whole = TestModels.seeded(NAME, manager, SEED);
                    Qlora.quantize(whole, quantization.getQuant(), Qlora.DEFAULT_SKIP);
                    expected = base(whole);
                }
                compare(type, nested, expected, started(group, checkpoint, quantization));
                // A pre-quantized checkpoint's own quantization_config says what it holds.
                compare(
                        type,
                        nested,
                        expected,
                        started(group, directory.resolve(packed(type, nested)), null));
                // A float16 checkpoint: its values widened exactly, then quantized.
                Map<String, float[]> fromHalf;
                try (NDManager manager = TestModels.newManager()) {
                    CausalLM whole = TestModels.seeded(NAME, manager, SEED);
                    for (Parameter parameter : StateDict.parameters(whole).values()) {
                        NDArray array = parameter.getArray();
                        array.set(
                                array.toType(DataType.FLOAT16, false)
                                        .toType(DataType.FLOAT32, false)
                                        .toFloatArray());
                    }
                    Qlora.quantize(whole, quantization.getQuant(), Qlora.DEFAULT_SKIP);
                    fromHalf = base(whole);
                }
                compare(
                        type,
                        nested,
                        fromHalf,
                        started(group, directory.resolve(FLOAT16), quantization));
                System.out.printf(
                        "%s nested %s: %d base tensors started sharded, quantized as read (from"
                                + " float32 and float16) and as stored, equal the whole model's%n",
                        type, nested, expected.size());
            }
        }
    }

    private static QuantizationConfig config(QuantType type, boolean nested) {
        return QuantizationConfig.builder()
                .setQuantType(type)
                .optNested(nested)
                .optStorageType(type == QuantType.NF4 && nested ? "bfloat16" : "uint8")
                .build();
    }

    private static String packed(QuantType type, boolean nested) {
        return type.getName() + (nested ? "-nested" : "");
    }

    private static void compare(
            QuantType type,
            boolean nested,
            Map<String, float[]> expected,
            Map<String, float[]> started) {
        if (!expected.keySet().equals(started.keySet())) {
            throw new AssertionError(
                    type
                            + " nested "
                            + nested
                            + ": "
                            + started.keySet()
                            + " vs "
                            + expected.keySet());
        }
        for (String name : expected.keySet()) {
            if (!Arrays.equals(expected.get(name), started.get(name))) {
                throw new AssertionError(type + " nested " + nested + ": " + name);
            }
        }
    }

    /**
     * Starts a model sharded from a checkpoint with rank-4 adapters and gathers it back.
     *
     * @param group the job's ranks
     * @param checkpoint a float checkpoint, or a pre-quantized one
     * @param quantization the 4-bit base to quantize a float checkpoint to, or null
     * @return the base's parameters, as {@link #base} gives them
     * @throws IOException if the checkpoint cannot be read
     */
    public static Map<String, float[]> started(
            ProcessGroup group, Path checkpoint, QuantizationConfig quantization)
            throws IOException {
        try (Model model = Model.newInstance("qlora", Device.cpu())) {
            CausalLM lm = Models.forCheckpoint(ModelFamilies.read(checkpoint));
            ShardedStart start =
                    TestModels.startSharded(
                            model,
                            lm,
                            checkpoint,
                            null,
                            quantization,
                            LoraBf16Checks.lora(4),
                            group,
                            true);
            try (FsdpTrainer trainer = start.trainer()) {
                trainer.getModel(); // closing gathers the parameters into the model
            }
            return base(lm);
        }
    }

    /**
     * Returns a model's parameters but the adapters, by their names without LoRA's {@code
     * base_layer.}, each widened to float32 (a byte's value for codes).
     *
     * @param lm the model
     * @return the values by name
     */
    public static Map<String, float[]> base(CausalLM lm) {
        Map<String, float[]> values = new TreeMap<>();
        for (Map.Entry<String, Parameter> entry : StateDict.parameters(lm).entrySet()) {
            if (!entry.getKey().contains("lora_")) {
                NDArray array = entry.getValue().getArray();
                values.put(
                        entry.getKey().replace(".base_layer", ""),
                        array.toType(DataType.FLOAT32, false).toFloatArray());
            }
        }
        return values;
    }
}
