package ai.djl.fsdp.qlora;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.lora.Lora;
import ai.djl.fsdp.lora.LoraState;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A model's merged output where its base is held in 4 bits, written unit by unit ({@link
 * ai.djl.fsdp.checkpoint.ModelStateWriter}): each {@link QuantizedLinear}'s weight decoded to
 * float32 from its unit's gathered codes and scales, as its forward decodes it, its adapter's
 * update added ({@link LoraState#merged(Block, StateTransform)}), and stored in a float type under
 * the plain model's {@code weight} name, with no trace of the quantization; every other tensor as
 * the float merge writes it.
 *
 * <p>As each decoded weight is written this measures how far what is stored lies from the model
 * that was trained, the decoded 4-bit weight plus the adapter's update in float32: the largest
 * absolute difference and the relative L2 difference over all decoded weights ({@link
 * #describe()}). Stored as float32 the two are equal; stored as bfloat16 or float16 the difference
 * is that type's rounding. (How far the 4-bit base lay from the float checkpoint it was quantized
 * from is not measured: a pre-quantized base has no such checkpoint, and a float one is not read
 * again.) The measure is taken where the state is written, rank 0.
 */
public final class MergedOutput {

    private final StateTransform state;
    private final Dtype storedAs;
    private final int weights;
    private int measured;
    private double maxDifference;
    private double squaredDifference;
    private double squaredNorm;

    private MergedOutput(Block root, Dtype storedAs) {
        this.storedAs = storedAs;
        Map<String, Parameter> named = Lora.mergedParameters(root);
        Set<String> decoded = new HashSet<>();
        StateTransform base = decodedBase(root, named, decoded);
        this.weights = decoded.size();
        StateTransform merged = LoraState.merged(root, base);
        StateTransform measuring =
                StateTransform.of(
                        merged.declare(),
                        (unit, sink) ->
                                merged.transform(
                                        unit,
                                        (name, value) -> {
                                            if (decoded.contains(name)) {
                                                measure(value);
                                            }
                                            sink.put(name, value);
                                        }));
        this.state = measuring.withFloatsAs(storedAs);
    }

    /**
     * Returns the merged output of a model, its floating tensors stored as {@code storedAs}.
     *
     * @param root the model, its base quantized ({@link Qlora#quantize}) or not, adapted or not
     * @param storedAs {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @return the merged output
     */
    public static MergedOutput of(Block root, Dtype storedAs) {
        return new MergedOutput(root, storedAs);
    }

    /**
     * Returns the state to write, once.
     *
     * @return the transform
     */
    public StateTransform getState() {
        return state;
    }

    /**
     * Returns the L2 norm of the stored weights less the trained ones over the trained ones' norm,
     * over the weights written so far.
     *
     * @return the relative difference, 0 when nothing was written
     */
    public double getRelativeDifference() {
        return squaredNorm == 0 ? 0 : Math.sqrt(squaredDifference / squaredNorm);
    }

    /**
     * Says what the output holds for a 4-bit base and how far it lies from the trained model, once
     * it is written.
     *
     * @return one line, or null for a float base or where nothing was written (ranks but 0)
     */
    public String describe() {
        if (weights == 0 || measured == 0) {
            return null;
        }
        String type = storedAs.precision().name().toLowerCase(Locale.ROOT);
        String line =
                measured
                        + " 4-bit weights decoded, their adapters merged, stored as "
                        + type
                        + ": ";
        if (squaredDifference == 0) {
            return line + "each equals the trained 4-bit weight plus its adapter's update";
        }
        return line
                + String.format(
                        Locale.ROOT,
                        "at most %.2e (relative L2 %.2e) from the trained 4-bit weights plus"
                                + " the adapters' updates, %s's rounding",
                        maxDifference,
                        getRelativeDifference(),
                        type);
    }

    /** Adds one merged weight's difference from its stored rounding to the measure. */
    private void measure(NDArray value) {
        measured++;
        Precision stored = storedAs.precision();
        try (NDManager scope = value.getManager().newSubManager()) {
            value.tempAttach(scope);
            NDArray wide = Precision.FLOAT32.cast(value);
            squaredNorm += sumOfSquares(wide);
            if (stored != Precision.FLOAT32) {
                NDArray difference = Precision.FLOAT32.cast(stored.cast(wide)).sub(wide);
                maxDifference = Math.max(maxDifference, difference.abs().max().getFloat());
                squaredDifference += sumOfSquares(difference);
            }
        }
    }

    private static double sumOfSquares(NDArray values) {
        return values.square().sum().getFloat();
    }

    /**
     * The named parameters' state with each quantized layer's weight decoded to float32 under the
     * name of its packed codes, its other 4-bit parameters left out; the names decoded go to {@code
     * decoded}.
     */
    private static StateTransform decodedBase(
            Block root, Map<String, Parameter> named, Set<String> decoded) {
        QuantizedLayers layers = QuantizedLayers.of(root);
        Map<Parameter, String> names = new IdentityHashMap<>();
        List<StateTransform.Entry> entries = new ArrayList<>();
        for (StateTransform.Entry entry : StateTransform.parameters(named).declare()) {
            Parameter parameter = named.get(entry.name());
            names.put(parameter, entry.name());
            QuantizedLinear layer = layers.layerOf(parameter);
            if (layer == null) {
                entries.add(entry);
            } else if (layers.isCodes(parameter)) {
                decoded.add(entry.name());
                entries.add(
                        new StateTransform.Entry(entry.name(), Dtype.F32, layer.getWeightShape()));
            }
        }
        return layers.state(
                entries,
                names,
                (name, parameter, sink) -> {
                    QuantizedLinear layer = layers.layerOf(parameter);
                    if (layer == null) {
                        sink.put(name, parameter.getArray());
                    } else if (layers.isCodes(parameter)) {
                        try (NDArray weight = decode(layer)) {
                            sink.put(name, weight);
                        }
                    }
                });
    }

    /** A layer's weight decoded from its unit's gathered arrays, float32. */
    private static NDArray decode(QuantizedLinear layer) {
        NDArray codes = layer.getParameters().get(QuantizedLinear.WEIGHT).getArray();
        NDManager manager = codes.getManager();
        try (NDManager scope = manager.newSubManager()) {
            NDArray weight =
                    layer.decode(
                            parameter -> {
                                NDArray value = parameter.getArray();
                                value.tempAttach(scope);
                                // Scales carried in a narrower compute type widen exactly.
                                return Precision.isFloating(value)
                                        ? Precision.FLOAT32.cast(value)
                                        : value;
                            },
                            Precision.FLOAT32);
            NDArray wide = Precision.FLOAT32.cast(weight);
            wide.attach(manager);
            return wide;
        }
    }
}
