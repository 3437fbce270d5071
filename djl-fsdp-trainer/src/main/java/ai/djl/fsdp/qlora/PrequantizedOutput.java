package ai.djl.fsdp.qlora;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraState;
import ai.djl.fsdp.quant.NestedScales;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A model's base held in 4 bits, without its adapters, in the layout transformers saves a model
 * loaded with {@code load_in_4bit} and {@link PrequantizedSource} reads, written unit by unit
 * ({@link ai.djl.fsdp.checkpoint.ModelStateWriter}): for each {@link QuantizedLinear} the packed
 * codes as they are, never decoded (labelled with the storage type, as many of its elements as the
 * bytes make; a weight whose bytes do not divide into them keeps uint8), {@code weight.absmax}
 * (float32, or with double quantization its 8-bit codes), {@code weight.quant_map} (the code's
 * float32 values, FP4's nibble 8 as +0.0, as bitsandbytes stores it), with double quantization
 * {@code weight.nested_absmax} and {@code weight.nested_quant_map}, and {@code
 * weight.quant_state.bitsandbytes__nf4} (or {@code __fp4}): the rest of bitsandbytes' quant state
 * as JSON in a uint8 tensor ({@code quant_type}, {@code blocksize}, {@code dtype}, {@code shape},
 * and {@code nested_blocksize}, {@code nested_dtype}, {@code nested_offset}). Scales and maps are
 * stored as float32 whatever type the unit carries them in (a narrower compute type widens exactly,
 * so they load back as they were held). Every other tensor is written as {@link LoraState#base}
 * writes it, its floats stored in the given type.
 *
 * <p>The state's sizes are declared before any unit is gathered, yet the nested offset is a value
 * in a unit: it is written with nine significant digits in a fixed width ({@code % .8e}, which
 * reads back as the same float32), so the JSON's length does not depend on it.
 */
public final class PrequantizedOutput {

    private PrequantizedOutput() {}

    /**
     * Returns the state of a model's base, its 4-bit layers stored pre-quantized.
     *
     * @param root the model, its base quantized ({@link Qlora#quantize}), adapted or not
     * @param floatType the type of the floating tensors not quantized, and the {@code dtype} the
     *     quant states name: {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @param storage the type that labels the packed bytes ({@code bnb_4bit_quant_storage}): U8,
     *     I8, F16, BF16 or F32
     * @return the transform
     */
    public static StateTransform of(Block root, Dtype floatType, Dtype storage) {
        Map<String, Parameter> named = Lora.mergedParameters(root);
        QuantizedLayers layers = QuantizedLayers.of(root);
        Map<Parameter, String> names = new IdentityHashMap<>();
        List<StateTransform.Entry> entries = new ArrayList<>();
        for (StateTransform.Entry entry : LoraState.base(root).withFloatsAs(floatType).declare()) {
            Parameter parameter = named.get(entry.name());
            names.put(parameter, entry.name());
            QuantizedLinear layer = layers.layerOf(parameter);
            String role = layers.role(parameter);
            if (layer == null) {
                entries.add(entry);
            } else if (QuantizedLinear.WEIGHT.equals(role)) {
                long bytes = entry.shape().size();
                Dtype label = bytes % storage.bytes() == 0 ? storage : Dtype.U8;
                entries.add(
                        new StateTransform.Entry(
                                entry.name(), label, new Shape(bytes / label.bytes(), 1)));
                int json = quantState(layer, 0f, floatType).length;
                entries.add(
                        new StateTransform.Entry(
                                stateName(entry.name(), layer), Dtype.U8, new Shape(json)));
            } else if (QuantizedLinear.ABSMAX.equals(role) && layer.getConfig().isNested()) {
                entries.add(new StateTransform.Entry(entry.name(), Dtype.U8, entry.shape()));
            } else if (!QuantizedLinear.NESTED_OFFSET.equals(role)) {
                entries.add(new StateTransform.Entry(entry.name(), Dtype.F32, entry.shape()));
            }
        }
        return layers.state(
                entries,
                names,
                (name, parameter, sink) -> {
                    String role = layers.role(parameter);
                    if (QuantizedLinear.WEIGHT.equals(role)) {
                        QuantizedLinear layer = layers.layerOf(parameter);
                        writeCodes(name, layer, parameter.getArray(), floatType, sink);
                    } else if (QuantizedLinear.QUANT_MAP.equals(role)) {
                        writeMap(name, layers.layerOf(parameter), parameter, sink);
                    } else if (!QuantizedLinear.NESTED_OFFSET.equals(role)) {
                        sink.put(name, parameter.getArray());
                    }
                });
    }

    /** Writes a layer's packed codes, as they are, and its quant state's JSON. */
    private static void writeCodes(
            String name,
            QuantizedLinear layer,
            NDArray codes,
            Dtype floatType,
            StateTransform.Sink sink)
            throws IOException {
        sink.putBytes(name, codes);
        float offset = 0f;
        if (layer.getConfig().isNested()) {
            NDArray held = layer.getParameters().get(QuantizedLinear.NESTED_OFFSET).getArray();
            NDArray wide = Precision.FLOAT32.cast(held);
            offset = wide.getFloat(0);
            if (wide != held) {
                wide.close();
            }
        }
        byte[] json = quantState(layer, offset, floatType);
        try (NDArray state =
                QuantizedLinear.bytes(codes.getManager(), json, new Shape(json.length))) {
            sink.put(stateName(name, layer), state);
        }
    }

    /**
     * Writes a layer's code map as bitsandbytes stores it: the code's own float32 values (which a
     * loader checks it against; under a narrower compute type the unit holds them rounded), FP4's
     * -0.0 at nibble 8 as +0.0.
     */
    private static void writeMap(
            String name, QuantizedLinear layer, Parameter held, StateTransform.Sink sink)
            throws IOException {
        float[] code = layer.getConfig().getQuantType().getCode();
        for (int i = 0; i < code.length; i++) {
            code[i] += 0f; // -0.0 + 0.0 is +0.0
        }
        try (NDArray map = held.getArray().getManager().create(code)) {
            sink.put(name, map);
        }
    }

    private static String stateName(String weight, QuantizedLinear layer) {
        return weight + PrequantizedSource.QUANT_STATE + layer.getConfig().getQuantType().getName();
    }

    /**
     * bitsandbytes' quant state but its tensors, as JSON: what {@code QuantState.as_dict(packed =
     * True)} packs, in its order.
     */
    private static byte[] quantState(QuantizedLinear layer, float offset, Dtype floatType) {
        QuantConfig config = layer.getConfig();
        long[] shape = layer.getWeightShape().getShape();
        StringBuilder json =
                new StringBuilder("{\"quant_type\": \"")
                        .append(config.getQuantType().getName())
                        .append("\", \"blocksize\": ")
                        .append(config.getBlockSize())
                        .append(", \"dtype\": \"")
                        .append(floatType.precision().name().toLowerCase(Locale.ROOT))
                        .append("\", \"shape\": [")
                        .append(shape[0])
                        .append(", ")
                        .append(shape[1])
                        .append(']');
        if (config.isNested()) {
            if (!Float.isFinite(offset)) {
                throw new IllegalStateException(
                        "a 4-bit weight's nested offset is " + offset + ": its scales are broken");
            }
            json.append(", \"nested_blocksize\": ")
                    .append(NestedScales.BLOCK_SIZE)
                    .append(", \"nested_dtype\": \"float32\", \"nested_offset\":")
                    .append(String.format(Locale.ROOT, "% .8e", offset));
        }
        return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }
}
