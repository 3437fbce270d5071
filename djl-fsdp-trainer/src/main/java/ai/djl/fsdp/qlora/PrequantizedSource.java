package ai.djl.fsdp.qlora;

import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.quant.BlockQuantizer;
import ai.djl.fsdp.quant.DynamicMap;
import ai.djl.fsdp.quant.NestedScales;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.fsdp.safetensors.TensorInfo;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The 4-bit layers of a pre-quantized checkpoint, as transformers saves a model loaded with {@code
 * load_in_4bit}: beside each quantized projection's packed {@code weight} (uint8, or bytes labelled
 * with the storage type), its {@code weight.absmax} and {@code weight.quant_map}, with double
 * quantization {@code weight.nested_absmax} and {@code weight.nested_quant_map}, and {@code
 * weight.quant_state.bitsandbytes__nf4} (or {@code __fp4}): the rest of bitsandbytes' quant state,
 * a JSON object stored as uint8 (its {@code quant_type}, {@code blocksize}, {@code shape}, and with
 * double quantization {@code nested_blocksize} and {@code nested_offset}).
 *
 * <p>Each {@link QuantizedLinear}'s parameters, but its bias, are read as stored: a rank reads only
 * the bytes of its own shard, nothing is quantized again. Every layer's tensors are checked against
 * its quantization when the source is made, and a disagreement is refused naming the tensor.
 */
public final class PrequantizedSource implements ParameterSource {

    /** What follows a weight's name in its quant state's tensor name, before the quant type. */
    public static final String QUANT_STATE = ".quant_state.bitsandbytes__";

    private final SafetensorsCheckpoint checkpoint;
    private final Map<String, String> tensorById = new HashMap<>();
    private final Map<String, Float> offsetById = new HashMap<>();
    private final Map<String, float[]> codeById = new HashMap<>();
    private final Set<String> tensors = new HashSet<>();

    private PrequantizedSource(SafetensorsCheckpoint checkpoint) {
        this.checkpoint = checkpoint;
    }

    /**
     * Matches every {@link QuantizedLinear} of a model to its tensors in a checkpoint and checks
     * them. A checkpoint holding 4-bit tensors for a projection the model keeps in float is refused
     * too: it must load as a 4-bit base.
     *
     * @param root the model, its projections quantized as the checkpoint's configuration says
     * @param checkpoint the checkpoint
     * @param storedPrefix what the model's names start with that the checkpoint's may omit (the
     *     base model's prefix), or the empty string
     * @return the source of the quantized layers' parameters
     * @throws IllegalArgumentException naming the first tensor that disagrees with the model
     */
    public static PrequantizedSource match(
            Block root, SafetensorsCheckpoint checkpoint, String storedPrefix) {
        PrequantizedSource source = new PrequantizedSource(checkpoint);
        for (Map.Entry<String, Block> entry : StateDict.modules(root).entrySet()) {
            if (entry.getValue() instanceof QuantizedLinear layer) {
                String path = entry.getKey();
                if (!checkpoint.contains(path + "." + QuantizedLinear.WEIGHT)
                        && path.startsWith(storedPrefix)) {
                    path = path.substring(storedPrefix.length());
                }
                source.add(layer, path + "." + QuantizedLinear.WEIGHT);
            }
        }
        for (String name : checkpoint.names()) {
            if (name.contains(QUANT_STATE) && !source.tensors.contains(name)) {
                throw new IllegalArgumentException(
                        name
                                + ": the checkpoint stores this weight in 4 bits (bitsandbytes),"
                                + " but the model keeps it in float; load the checkpoint as a"
                                + " 4-bit base, with its quantization_config");
            }
        }
        return source;
    }

    /**
     * Returns the checkpoint's tensors this source reads or has checked.
     *
     * @return the stored names
     */
    public Set<String> tensors() {
        return Collections.unmodifiableSet(tensors);
    }

    /**
     * Returns whether this source reads a parameter.
     *
     * @param parameter the parameter
     * @return true for a quantized layer's parameter but its bias
     */
    public boolean holds(Parameter parameter) {
        String id = parameter.getId();
        return tensorById.containsKey(id) || offsetById.containsKey(id) || codeById.containsKey(id);
    }

    @Override
    public NDArray read(NDManager manager, Parameter parameter, long from, long to)
            throws IOException {
        String id = parameter.getId();
        NDIndex range = new NDIndex("{}:{}", from, to);
        if (offsetById.containsKey(id)) {
            return manager.create(new float[] {offsetById.get(id)}).get(range);
        }
        if (codeById.containsKey(id)) {
            return manager.create(codeById.get(id)).get(range);
        }
        String tensor = tensorById.get(id);
        if (tensor == null) {
            return null;
        }
        if (!QuantizedLinear.WEIGHT.equals(parameter.getName())) {
            return checkpoint.read(manager, tensor, from, to);
        }
        // Bytes [from, to) of the packed codes, whatever element type labels them.
        int size = checkpoint.info(tensor).dtype().bytes();
        ByteBuffer mapped = checkpoint.map(tensor, from / size, (to + size - 1) / size);
        byte[] bytes = new byte[Math.toIntExact(to - from)];
        mapped.position(Math.toIntExact(from % size));
        mapped.get(bytes);
        return QuantizedLinear.bytes(manager, bytes, new Shape(bytes.length));
    }

    /** Checks one layer's tensors and maps its parameters to them. */
    private void add(QuantizedLinear layer, String weight) {
        QuantConfig config = layer.getConfig();
        long count = layer.inFeatures() * layer.outFeatures();
        int blocks = BlockQuantizer.blocks(count, config.getBlockSize());
        String stateName = weight + QUANT_STATE + config.getQuantType().getName();
        JsonObject state = quantState(weight, stateName, config);
        long[] shape = layer.getWeightShape().getShape();
        expect(stateName, "shape", "[" + shape[0] + ", " + shape[1] + "]", shapeOf(state));
        expect(stateName, "blocksize", config.getBlockSize(), integer(state, "blocksize"));
        TensorInfo packed = info(weight);
        long bytes = packed.elements() * packed.dtype().bytes();
        if (packed.dtype().bytes() > 4
                || bytes != (count + 1) / 2
                || !packed.shape().equals(new Shape(packed.elements(), 1))) {
            throw new IllegalArgumentException(
                    weight
                            + ": "
                            + packed.dtype()
                            + " "
                            + packed.shape()
                            + " does not hold the "
                            + (count + 1) / 2
                            + " packed bytes of a "
                            + layer.getWeightShape()
                            + " weight; the checkpoint does not fit its configuration");
        }
        Map<String, Pair<Dtype, Shape>> stored = new HashMap<>();
        stored.put(QuantizedLinear.QUANT_MAP, new Pair<>(Dtype.F32, new Shape(16)));
        if (config.isNested()) {
            stored.put(QuantizedLinear.ABSMAX, new Pair<>(Dtype.U8, new Shape(blocks)));
            int nested = BlockQuantizer.blocks(blocks, NestedScales.BLOCK_SIZE);
            stored.put(QuantizedLinear.NESTED_ABSMAX, new Pair<>(Dtype.F32, new Shape(nested)));
            stored.put(
                    QuantizedLinear.NESTED_QUANT_MAP,
                    new Pair<>(Dtype.F32, new Shape(DynamicMap.SIZE)));
            expect(
                    stateName,
                    "nested_blocksize",
                    NestedScales.BLOCK_SIZE,
                    integer(state, "nested_blocksize"));
        } else {
            stored.put(QuantizedLinear.ABSMAX, new Pair<>(Dtype.F32, new Shape(blocks)));
        }
        String prefix = weight.substring(0, weight.length() - QuantizedLinear.WEIGHT.length());
        for (Map.Entry<String, Pair<Dtype, Shape>> entry : stored.entrySet()) {
            TensorInfo info = info(prefix + entry.getKey());
            Pair<Dtype, Shape> wanted = entry.getValue();
            if (info.dtype() != wanted.getKey() || !info.shape().equals(wanted.getValue())) {
                throw new IllegalArgumentException(
                        info.name()
                                + ": "
                                + info.dtype()
                                + " "
                                + info.shape()
                                + " where its configuration ("
                                + config.getQuantType().getName()
                                + (config.isNested() ? ", double quantization" : "")
                                + ") needs "
                                + wanted.getKey()
                                + " "
                                + wanted.getValue());
            }
        }
        checkQuantMap(prefix + QuantizedLinear.QUANT_MAP, config);
        for (Pair<String, Parameter> pair : layer.getDirectParameters()) {
            String name = pair.getKey();
            String id = pair.getValue().getId();
            if (QuantizedLinear.NESTED_OFFSET.equals(name)) {
                offsetById.put(id, offset(stateName, state));
            } else if (QuantizedLinear.QUANT_MAP.equals(name)) {
                // Decoded as the kernels decode (FP4's nibble 8 is -0.0 there, +0.0 when saved).
                codeById.put(id, config.getQuantType().getCode());
            } else if (!"bias".equals(name)) {
                tensorById.put(id, prefix + name);
            }
        }
        tensors.add(weight);
        tensors.add(stateName);
        stored.keySet().forEach(name -> tensors.add(prefix + name));
    }

    private JsonObject quantState(String weight, String stateName, QuantConfig config) {
        if (!checkpoint.contains(stateName)) {
            List<String> found = new ArrayList<>();
            for (String name : checkpoint.names()) {
                if (name.startsWith(weight + QUANT_STATE)) {
                    found.add(name);
                }
            }
            throw new IllegalArgumentException(
                    stateName
                            + " is missing"
                            + (found.isEmpty() ? "" : " (the checkpoint has " + found + ")")
                            + ": the weight is not stored as its configuration ("
                            + config.getQuantType().getName()
                            + ") says; fix quantization_config or use the model's float"
                            + " checkpoint");
        }
        try (NDManager scope = NDManager.newBaseManager()) {
            byte[] json = checkpoint.read(scope, stateName).toByteArray();
            JsonElement parsed = JsonParser.parseString(new String(json, StandardCharsets.UTF_8));
            if (!parsed.isJsonObject()) {
                throw new JsonParseException("not an object");
            }
            JsonObject state = parsed.getAsJsonObject();
            String type = state.has("quant_type") ? state.get("quant_type").getAsString() : null;
            expect(stateName, "quant_type", config.getQuantType().getName(), type);
            if (config.isNested() != state.has("nested_offset")) {
                throw new IllegalArgumentException(
                        stateName
                                + (config.isNested()
                                        ? " has no nested_offset, but quantization_config asks for"
                                                + " double quantization"
                                        : " holds a nested_offset (double quantization), but"
                                                + " quantization_config does not ask for it"));
            }
            return state;
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalArgumentException refused) {
                throw refused;
            }
            throw new IllegalArgumentException(
                    stateName + " is not bitsandbytes' quant state (a JSON object): " + e, e);
        }
    }

    private void checkQuantMap(String name, QuantConfig config) {
        float[] code = config.getQuantType().getCode();
        try (NDManager scope = NDManager.newBaseManager()) {
            float[] stored = checkpoint.read(scope, name).toFloatArray();
            for (int i = 0; i < code.length; i++) {
                if (stored[i] != code[i]) {
                    throw new IllegalArgumentException(
                            name
                                    + " is not "
                                    + config.getQuantType().getName()
                                    + "'s code (value "
                                    + i
                                    + " is "
                                    + stored[i]
                                    + ", not "
                                    + code[i]
                                    + ")");
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(name + " cannot be read: " + e, e);
        }
    }

    private TensorInfo info(String name) {
        if (!checkpoint.contains(name)) {
            throw new IllegalArgumentException(
                    name
                            + " is missing: bitsandbytes saves it beside every 4-bit weight; the"
                            + " checkpoint is incomplete");
        }
        return checkpoint.info(name);
    }

    private static float offset(String stateName, JsonObject state) {
        JsonElement value = state.get("nested_offset");
        if (!(value.isJsonPrimitive() && value.getAsJsonPrimitive().isNumber())
                || !Float.isFinite(value.getAsFloat())) {
            throw new IllegalArgumentException(
                    stateName + ": nested_offset " + value + " is not a finite number");
        }
        return value.getAsFloat();
    }

    private static String shapeOf(JsonObject state) {
        JsonElement shape = state.get("shape");
        if (shape == null || !shape.isJsonArray()) {
            return String.valueOf(shape);
        }
        List<String> sizes = new ArrayList<>();
        shape.getAsJsonArray().forEach(size -> sizes.add(size.toString()));
        return "[" + String.join(", ", sizes) + "]";
    }

    private static Object integer(JsonObject state, String key) {
        JsonElement value = state.get(key);
        return value != null && value.isJsonPrimitive() && value.getAsJsonPrimitive().isNumber()
                ? value.getAsInt()
                : value;
    }

    private static void expect(String stateName, String key, Object wanted, Object found) {
        if (!wanted.equals(found)) {
            throw new IllegalArgumentException(
                    stateName
                            + ": "
                            + key
                            + " is "
                            + found
                            + " where the model's configuration needs "
                            + wanted
                            + "; the checkpoint does not fit its quantization_config");
        }
    }
}
