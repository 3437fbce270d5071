package ai.djl.fsdp.qlora;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.Placeholder;
import ai.djl.fsdp.lora.LinearProjection;
import ai.djl.fsdp.quant.BlockQuantizer;
import ai.djl.fsdp.quant.DynamicMap;
import ai.djl.fsdp.quant.NestedScales;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.reflect.ParameterArrays;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.Pair;
import ai.djl.util.PairList;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * A frozen linear projection whose weight is held as bitsandbytes holds a {@code Linear4bit}'s:
 * parameters {@code weight} (the packed codes, uint8 {@code [(n + 1) / 2, 1]}), {@code
 * weight.quant_map} (the code's 16 values), {@code weight.absmax} (one float32 scale a block, or
 * with double quantization one 8-bit code a block beside {@code weight.nested_absmax}, {@code
 * weight.nested_quant_map} and {@code weight.nested_offset}), and the projection's own {@code
 * bias}. Every parameter is frozen.
 *
 * <p>The forward decodes the weight from its parameters' current values (under FSDP, the unit's
 * gathered buffers) as bitsandbytes decodes it (float32 products of code and scale), in the input's
 * type (each product rounded to it as libtorch's cast rounds), and computes the projection as the
 * original did; the decoded weight is an intermediate of the forward, freed with it (or held by its
 * graph until backward, like any activation).
 */
public final class QuantizedLinear extends AbstractBlock implements LinearProjection {

    /** The packed codes' parameter name, bitsandbytes' {@code weight}. */
    public static final String WEIGHT = "weight";

    static final String QUANT_MAP = "weight.quant_map";
    static final String ABSMAX = "weight.absmax";
    static final String NESTED_ABSMAX = "weight.nested_absmax";
    static final String NESTED_QUANT_MAP = "weight.nested_quant_map";
    static final String NESTED_OFFSET = "weight.nested_offset";

    /**
     * Values libtorch's operators decode at a time off the CPU: their float32 decoding (a few
     * arrays of 16 MB) is all a forward holds beside the weight in the compute type.
     */
    static final long DECODED_CHUNK = 1L << 22;

    private final LinearProjection original;
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
     * Replaces a projection, initialized or not, keeping its bias. Its float32 weight is quantized
     * when this block is initialized: the projection's values if it has them, else values its own
     * initializer draws; the float weight is closed then.
     *
     * @param projection the projection to replace (with a float32 {@code weight})
     * @param config the code, block size and double quantization
     */
    public QuantizedLinear(LinearProjection projection, QuantConfig config) {
        this.original = projection;
        this.in = projection.inFeatures();
        this.out = projection.outFeatures();
        this.fanInFanOut = projection.fanInFanOut();
        this.config = config;
        long count = in * out;
        int blocks = BlockQuantizer.blocks(count, config.getBlockSize());
        packed = frozen(WEIGHT, new Shape((count + 1) / 2, 1));
        quantMap = frozen(QUANT_MAP, new Shape(16));
        absmax = frozen(ABSMAX, new Shape(blocks));
        if (config.isNested()) {
            nestedAbsmax =
                    frozen(
                            NESTED_ABSMAX,
                            new Shape(BlockQuantizer.blocks(blocks, NestedScales.BLOCK_SIZE)));
            nestedQuantMap = frozen(NESTED_QUANT_MAP, new Shape(DynamicMap.SIZE));
            nestedOffset = frozen(NESTED_OFFSET, new Shape(1));
        } else {
            nestedAbsmax = null;
            nestedQuantMap = null;
            nestedOffset = null;
        }
        Parameter originalBias = projection.getParameters().get("bias");
        bias = originalBias == null ? null : addParameter(originalBias);
    }

    /**
     * Quantizes the float weight (drawn by the projection's initializer where it has no values) and
     * gives every parameter its array; where the weight is to be a {@link Placeholder} (another
     * rank's codes replace this one's as the shards load), gives every parameter a placeholder of
     * its type and quantizes nothing.
     */
    @Override
    public void initialize(NDManager manager, DataType dataType, Shape... inputShapes) {
        if (packed.isInitialized()) {
            return;
        }
        Parameter weight = original.getParameters().get(WEIGHT);
        Map<String, NDArray> arrays;
        if (!weight.isInitialized() && Placeholder.isPlaceholder(weight)) {
            arrays = placeholders(manager);
        } else {
            arrays = arrays(quantize(weight, manager, inputShapes), manager);
            weight.close();
        }
        arrays.forEach((name, array) -> ParameterArrays.replace(parameter(name), array));
        // The bias, the only parameter left without an array.
        super.initialize(manager, dataType, inputShapes);
        if (bias != null) {
            bias.freeze(true);
        }
    }

    /** Quantizes the float weight, drawing it first where it has no values. */
    private QuantizedWeight quantize(Parameter weight, NDManager manager, Shape[] inputShapes) {
        if (!weight.isInitialized()) {
            original.initialize(manager, DataType.FLOAT32, inputShapes);
            // A placeholder a checkpoint's values replace as the shards load (uninitialized
            // memory, as Models.forCheckpoint draws) may hold anything: quantize it as zeros.
            NDArray values = weight.getArray();
            try (NDArray nan = values.isNaN();
                    NDArray infinite = values.isInfinite();
                    NDArray bad = nan.logicalOr(infinite)) {
                values.set(new NDIndex("{}", bad), 0f);
            }
        }
        NDArray values = weight.getArray();
        if (values.getDataType() != DataType.FLOAT32) {
            throw new IllegalArgumentException(
                    "a projection is quantized from its float32 weight, not "
                            + values.getDataType());
        }
        // Read from the tensor's own memory (on the host) a chunk at a time: no float[] of the
        // whole weight.
        NDArray host = Precision.toDevice(values, Device.cpu(), false);
        try {
            FloatBuffer floats =
                    TensorMemory.hostBuffer(host, "weight to quantize").asFloatBuffer();
            return QuantizedWeight.quantize(floats, values.getShape().getShape(), config);
        } finally {
            if (host != values) {
                host.close();
            }
        }
    }

    /** Returns a placeholder for each parameter but the bias, of the type its values have. */
    private Map<String, NDArray> placeholders(NDManager manager) {
        Map<String, NDArray> arrays = new HashMap<>();
        for (Pair<String, Parameter> pair : getDirectParameters()) {
            Parameter parameter = pair.getValue();
            if (parameter != bias) {
                boolean codes = parameter == packed || parameter == absmax && nestedAbsmax != null;
                arrays.put(
                        pair.getKey(),
                        Placeholder.INSTANCE.initialize(
                                manager,
                                parameter.getShape(),
                                codes ? DataType.UINT8 : DataType.FLOAT32));
            }
        }
        return arrays;
    }

    private Parameter parameter(String name) {
        return getDirectParameters().get(name);
    }

    /**
     * Returns the arrays of each parameter but the bias for a quantized weight.
     *
     * @param weight the quantized weight
     * @param manager the arrays' manager
     * @return the arrays by parameter name
     */
    static Map<String, NDArray> arrays(QuantizedWeight weight, NDManager manager) {
        Map<String, NDArray> arrays = new HashMap<>();
        arrays.put(
                WEIGHT,
                bytes(manager, weight.getPacked(), new Shape(weight.getPacked().length, 1)));
        arrays.put(QUANT_MAP, manager.create(weight.getConfig().getQuantType().getCode()));
        NestedScales nested = weight.getNested();
        if (nested == null) {
            arrays.put(ABSMAX, manager.create(weight.getAbsmax()));
        } else {
            arrays.put(
                    ABSMAX, bytes(manager, nested.getCodes(), new Shape(nested.getCodes().length)));
            arrays.put(NESTED_ABSMAX, manager.create(nested.getAbsmax()));
            arrays.put(NESTED_QUANT_MAP, manager.create(nested.getMap()));
            arrays.put(NESTED_OFFSET, manager.create(new float[] {nested.getOffset()}));
        }
        return arrays;
    }

    static NDArray bytes(NDManager manager, byte[] bytes, Shape shape) {
        return manager.create(ByteBuffer.wrap(bytes), shape, DataType.UINT8);
    }

    /** Returns the float weight's shape, in the projection's layout. */
    Shape getWeightShape() {
        return fanInFanOut ? new Shape(in, out) : new Shape(out, in);
    }

    /**
     * Returns the projection this block replaced, whose float weight parameter a checkpoint's
     * values are read for.
     *
     * @return the original projection
     */
    LinearProjection getOriginal() {
        return original;
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
     * Returns the weight these parameters decode to, in the projection's layout and the precision
     * of {@code like} (float32 when {@code like} is not float32, bfloat16 or float16), as the
     * forward decodes it.
     *
     * @param store where the parameters' current values are read
     * @param like an array of the wanted precision, on the device to read the parameters to
     * @param training whether the values are read for training
     * @return the decoded weight
     */
    public NDArray weight(ParameterStore store, NDArray like, boolean training) {
        Precision precision = Precision.ofArray(like);
        return decode(
                parameter -> store.getValue(parameter, like.getDevice(), training),
                precision == null ? Precision.FLOAT32 : precision);
    }

    /**
     * Returns the weight the given values of these parameters decode to, in the projection's layout
     * and the given precision: each value bitsandbytes' float32 product of code and scale, rounded
     * to the precision. On the CPU it is decoded in one pass into the weight's memory; elsewhere
     * with libtorch's operators, a chunk of float32 values at a time, each chunk cast before the
     * next is decoded.
     *
     * @param values each parameter's value (its current array, or a gathered copy)
     * @param target the decoded weight's precision
     * @return the decoded weight
     */
    NDArray decode(Function<Parameter, NDArray> values, Precision target) {
        Shape shape = getWeightShape();
        NDArray codes = values.apply(packed);
        NDArray scales = values.apply(absmax);
        if (nestedAbsmax != null) {
            try (NDArray centred =
                    Dequantization.eightBit(
                            scales,
                            values.apply(nestedQuantMap),
                            values.apply(nestedAbsmax),
                            NestedScales.BLOCK_SIZE)) {
                scales = centred.add(values.apply(nestedOffset));
            }
        }
        try {
            NDArray code = values.apply(quantMap);
            if (HostDecoding.applies(codes)) {
                return HostDecoding.fourBit(
                        codes,
                        floats(code),
                        floats(scales),
                        config.getBlockSize(),
                        shape,
                        target,
                        codes.getManager());
            }
            try (NDArray flat =
                    Dequantization.fourBit(
                            codes,
                            code,
                            scales,
                            config.getBlockSize(),
                            shape.size(),
                            DECODED_CHUNK,
                            target::cast)) {
                return flat.reshape(shape);
            }
        } finally {
            if (nestedAbsmax != null) {
                scales.close();
            }
        }
    }

    /** The float32 values of an array of any floating type (a narrower one widens exactly). */
    private static float[] floats(NDArray array) {
        NDArray wide = Precision.FLOAT32.cast(array);
        try {
            return wide.toFloatArray();
        } finally {
            if (wide != array) {
                wide.close();
            }
        }
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore store,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        NDArray x = inputs.singletonOrThrow();
        NDArray y;
        // The decoded weight is closed once used: autograd keeps what backward needs of it, and
        // left open it would stay until the unit's arrays are freed, every projection's at once.
        try (NDArray weight = weight(store, x, training);
                NDArray transposed = fanInFanOut ? null : weight.swapAxes(0, 1)) {
            y = x.matMul(fanInFanOut ? weight : transposed);
        }
        if (bias == null) {
            return new NDList(y);
        }
        try (y) {
            return new NDList(y.add(store.getValue(bias, x.getDevice(), training)));
        }
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape shape = inputShapes[0];
        return new Shape[] {shape.slice(0, shape.dimension() - 1).add(out)};
    }

    /** A frozen parameter whose array {@link #initialize} gives it (it has no initializer). */
    private Parameter frozen(String name, Shape shape) {
        return addParameter(
                Parameter.builder()
                        .setName(name)
                        .setType(Parameter.Type.OTHER)
                        .optShape(shape)
                        .optRequiresGrad(false)
                        .build());
    }
}
