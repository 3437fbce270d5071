package ai.djl.fsdp.zoo.lora;

import ai.djl.fsdp.qlora.PrequantizedSource;
import ai.djl.fsdp.qlora.Qlora;
import ai.djl.fsdp.qlora.QuantizedLinear;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.fsdp.zoo.CausalLM;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.hf.ConfigJson;
import ai.djl.fsdp.zoo.hf.HfCheckpoint;
import ai.djl.fsdp.zoo.hf.QuantizationConfig;
import ai.djl.fsdp.zoo.models.ModelFamilies;
import ai.djl.fsdp.zoo.models.Models;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Writes a float checkpoint's model as transformers saves one loaded with {@code load_in_4bit}: the
 * project's own quantizer makes the 4-bit tensors, laid out as bitsandbytes' {@code
 * QuantState.as_dict(packed=True)} lays them out (the packed {@code weight} labelled with the
 * storage type, {@code weight.absmax}, {@code weight.quant_map} with FP4's +0.0 at nibble 8 as
 * bitsandbytes stores it, the nested scales and map, and the rest of the state as a JSON object in
 * a uint8 tensor), and {@code config.json} gains the {@code quantization_config} block.
 */
public final class PrequantizedCheckpoints {

    private PrequantizedCheckpoints() {}

    /**
     * Writes the pre-quantized checkpoint of a float one.
     *
     * @param checkpoint the float checkpoint
     * @param config the 4-bit base (its storage type labels the packed bytes)
     * @param directory the directory to write
     * @return the directory
     * @throws IOException if reading or writing fails
     */
    public static Path write(Path checkpoint, QuantizationConfig config, Path directory)
            throws IOException {
        Files.createDirectories(directory);
        SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
        try (NDManager manager = TestModels.newManager()) {
            CausalLM lm = Models.create(ModelFamilies.read(checkpoint), manager);
            HfCheckpoint.load(lm, checkpoint);
            Qlora.quantize(lm, config.getQuant(), Qlora.DEFAULT_SKIP);
            Set<String> written = new HashSet<>();
            for (Map.Entry<String, Block> entry : StateDict.modules(lm).entrySet()) {
                if (entry.getValue() instanceof QuantizedLinear layer) {
                    written.addAll(writeLayer(writer, entry.getKey() + ".", layer, config));
                }
            }
            for (Map.Entry<String, Parameter> entry : StateDict.parameters(lm).entrySet()) {
                if (!written.contains(entry.getKey())) {
                    writer.add(entry.getKey(), entry.getValue().getArray());
                }
            }
            writer.write(directory.resolve(SafetensorsCheckpoint.SINGLE_FILE));
        }
        JsonObject json = ConfigJson.readObject(checkpoint);
        json.add(QuantizationConfig.KEY, block(config));
        Files.writeString(
                directory.resolve(ConfigJson.FILE),
                new GsonBuilder().serializeNulls().setPrettyPrinting().create().toJson(json));
        return directory;
    }

    /** Adds one layer's tensors; returns the names of the parameters they stand for. */
    private static Set<String> writeLayer(
            SafetensorsWriter writer,
            String prefix,
            QuantizedLinear layer,
            QuantizationConfig config) {
        String weight = prefix + QuantizedLinear.WEIGHT;
        Set<String> parameters = new HashSet<>();
        JsonObject state = new JsonObject();
        String type = config.getQuant().getQuantType().getName();
        state.addProperty("quant_type", type);
        state.addProperty("blocksize", config.getQuant().getBlockSize());
        state.addProperty("dtype", "float32");
        JsonArray shape = new JsonArray();
        shape.add(layer.outFeatures());
        shape.add(layer.inFeatures());
        state.add("shape", shape);
        for (var pair : layer.getDirectParameters()) {
            String name = pair.getKey();
            NDArray array = pair.getValue().getArray();
            if ("bias".equals(name)) {
                continue;
            }
            parameters.add(prefix + name);
            if (name.equals("weight.nested_offset")) {
                state.addProperty("nested_blocksize", 256);
                state.addProperty("nested_dtype", "float32");
                state.addProperty("nested_offset", array.getFloat(0));
            } else if (name.equals(QuantizedLinear.WEIGHT)) {
                Dtype label = storage(config.getStorageType());
                byte[] bytes = array.toByteArray();
                writer.add(
                        weight,
                        label,
                        new Shape(bytes.length / label.bytes(), 1),
                        ByteBuffer.wrap(bytes));
            } else if (name.equals("weight.quant_map")) {
                float[] code = array.toFloatArray();
                for (int i = 0; i < code.length; i++) {
                    code[i] += 0f; // bitsandbytes stores FP4's -0.0 as +0.0
                }
                writer.add(prefix + name, array.getManager().create(code));
            } else {
                writer.add(prefix + name, array);
            }
        }
        byte[] json = state.toString().getBytes(StandardCharsets.UTF_8);
        writer.add(
                weight + PrequantizedSource.QUANT_STATE + type,
                Dtype.U8,
                new Shape(json.length),
                ByteBuffer.wrap(json));
        return parameters;
    }

    /** The block transformers writes for a {@code BitsAndBytesConfig}. */
    private static JsonObject block(QuantizationConfig config) {
        JsonObject block = new JsonObject();
        block.addProperty("quant_method", "bitsandbytes");
        block.addProperty("load_in_4bit", true);
        block.addProperty("load_in_8bit", false);
        block.addProperty("bnb_4bit_quant_type", config.getQuant().getQuantType().getName());
        block.addProperty("bnb_4bit_use_double_quant", config.getQuant().isNested());
        block.addProperty("bnb_4bit_compute_dtype", "float32");
        block.addProperty("bnb_4bit_quant_storage", config.getStorageType());
        block.add("llm_int8_skip_modules", JsonNull.INSTANCE);
        return block;
    }

    /** The safetensors type that labels packed bytes stored as bitsandbytes' {@code name}. */
    private static Dtype storage(String name) {
        return switch (name) {
            case "uint8" -> Dtype.U8;
            case "int8" -> Dtype.I8;
            case "float16" -> Dtype.F16;
            case "bfloat16" -> Dtype.BF16;
            case "float32" -> Dtype.F32;
            default -> throw new IllegalArgumentException("no storage type " + name);
        };
    }
}
