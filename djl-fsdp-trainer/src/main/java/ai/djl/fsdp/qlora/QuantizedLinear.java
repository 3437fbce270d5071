package ai.djl.fsdp.qlora;

import ai.djl.fsdp.lora.LinearProjection;
import ai.djl.fsdp.quant.NestedScales;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.nio.ByteBuffer;

/**
 * A frozen linear projection whose weight is held as bitsandbytes holds a {@code Linear4bit}'s:
 * parameters {@code weight} (the packed codes, uint8 {@code [(n + 1) / 2, 1]}), {@code
 * weight.quant_map} (the code's 16 values), {@code weight.absmax} (one float32 scale a block, or
 * with double quantization one 8-bit code a block beside {@code weight.nested_absmax}, {@code
 * weight.nested_quant_map} and {@code weight.nested_offset}), and the projection's own {@code
 * bias}. Every parameter is frozen.
 *
 * <p>The forward decodes the weight from its parameters' current values (under FSDP, the unit's
 * gathered buffers) into float32 as bitsandbytes decodes it, casts it to the input's type, and
 * computes the projection as the original did; the decoded weight is an intermediate of the
 * forward, freed with it (or held by its graph until backward, like any activation).
 */
public final class QuantizedLinear extends AbstractBlock implements LinearProjection {

    private final long in;
    private final long out;
    private final boolean fanInFanOut;
    private final QuantConfig config;
    private final Parameter packed;
    private final Parameter quantMap;
    private final Parameter absmax;
    private final Parameter nestedAbsmax;
    private final Parameter nestedQuantMap;
    private final Parameter nestedOffset;
    private final Parameter bias;

    /**
     * Quantizes an initialized projection's weight (float32, in the projection's layout) and keeps
     * its bias.
     *
     * @param projection the projection to replace
     * @param config the code, block size and double quantization
     * @throws IllegalArgumentException if the projection has no initialized float32 weight
     */
    public QuantizedLinear(LinearProjection projection, QuantConfig config) {
        Parameter weight = projection.getParameters().get("weight");
        if (weight == null
                || !weight.isInitialized()
                || weight.getArray().getDataType() != DataType.FLOAT32) {
            throw new IllegalArgumentException(
                    "a projection is quantized from its initialized float32 weight: load or"
                            + " initialize the model before quantizing it");
        }
        NDArray values = weight.getArray();
        NDManager manager = values.getManager();
        QuantizedWeight quantized =
                QuantizedWeight.quantize(
                        values.toFloatArray(), values.getShape().getShape(), config);
        this.in = projection.inFeatures();
        this.out = projection.outFeatures();
        this.fanInFanOut = projection.fanInFanOut();
        this.config = config;
        byte[] bytes = quantized.getPacked();
        packed =
                frozen(
                        "weight",
                        manager.create(
                                ByteBuffer.wrap(bytes),
                                new Shape(bytes.length, 1),
                                DataType.UINT8));
        quantMap = frozen("weight.quant_map", manager.create(config.getQuantType().getCode()));
        NestedScales nested = quantized.getNested();
        if (nested == null) {
            absmax = frozen("weight.absmax", manager.create(quantized.getAbsmax()));
            nestedAbsmax = null;
            nestedQuantMap = null;
            nestedOffset = null;
        } else {
            byte[] codes = nested.getCodes();
            absmax =
                    frozen(
                            "weight.absmax",
                            manager.create(
                                    ByteBuffer.wrap(codes),
                                    new Shape(codes.length),
                                    DataType.UINT8));
            nestedAbsmax = frozen("weight.nested_absmax", manager.create(nested.getAbsmax()));
            nestedQuantMap = frozen("weight.nested_quant_map", manager.create(nested.getMap()));
            nestedOffset =
                    frozen(
                            "weight.nested_offset",
                            manager.create(new float[] {nested.getOffset()}));
        }
        Parameter original = projection.getParameters().get("bias");
        bias = original == null ? null : addParameter(original);
        if (bias != null) {
            bias.freeze(true);
        }
    }

    /**
     * Returns the code, block size and double quantization of the weight.
     *
     * @return the quantization
     */
    public QuantConfig getConfig() {
        return config;
    }

    @Override
    public long inFeatures() {
        return in;
    }

    @Override
    public long outFeatures() {
        return out;
    }

    @Override
    public boolean fanInFanOut() {
        return fanInFanOut;
    }

    /**
     * Refuses: a 4-bit weight does not take a float update in place.
     *
     * @param delta the update
     * @throws UnsupportedOperationException always, saying what to do instead
     */
    @Override
    public void addToWeight(NDArray delta) {
        throw new UnsupportedOperationException(
                "a 4-bit weight cannot take a merged LoRA update in place: merge into its"
                        + " dequantized copy (weight(...)) instead");
    }

    /**
     * Returns the weight these parameters decode to, float32, in the projection's layout.
     *
     * @param store where the parameters' current values are read
     * @param like an array on the device to read them to
     * @param training whether the values are read for training
     * @return the decoded weight
     */
    public NDArray weight(ParameterStore store, NDArray like, boolean training) {
        NDArray scales = store.getValue(absmax, like.getDevice(), training);
        if (nestedAbsmax != null) {
            scales =
                    Dequantization.eightBit(
                                    scales,
                                    store.getValue(nestedQuantMap, like.getDevice(), training),
                                    store.getValue(nestedAbsmax, like.getDevice(), training),
                                    NestedScales.BLOCK_SIZE)
                            .add(store.getValue(nestedOffset, like.getDevice(), training));
        }
        Shape shape = fanInFanOut ? new Shape(in, out) : new Shape(out, in);
        return Dequantization.fourBit(
                        store.getValue(packed, like.getDevice(), training),
                        store.getValue(quantMap, like.getDevice(), training),
                        scales,
                        config.getBlockSize(),
                        shape.size())
                .reshape(shape);
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore store,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray weight = Precision.castLike(weight(store, x, training), x);
        NDArray y = x.matMul(fanInFanOut ? weight : weight.swapAxes(0, 1));
        return new NDList(bias == null ? y : y.add(store.getValue(bias, x.getDevice(), training)));
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape shape = inputShapes[0];
        return new Shape[] {shape.slice(0, shape.dimension() - 1).add(out)};
    }

    private Parameter frozen(String name, NDArray value) {
        Parameter parameter =
                addParameter(
                        Parameter.builder()
                                .setName(name)
                                .setType(Parameter.Type.OTHER)
                                .optRequiresGrad(false)
                                .build());
        parameter.setArray(value);
        return parameter;
    }
}
