package ai.djl.fsdp.qlora;

import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.quant.BlockQuantizer;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * A float checkpoint read as a 4-bit base: the quantized layers' parameters are made from the float
 * weights the underlying source holds, quantized as they are read. A rank reads, for its shard's
 * packed codes and plain scales, only the whole blocks those elements cover, and quantizes only
 * them; nested scales depend on the mean over the whole weight, so for those the weight is read and
 * quantized whole (one weight at a time). Every other parameter is read from the underlying source
 * as it is.
 */
public final class QuantizingSource implements ParameterSource {

    private final ParameterSource floats;
    private final Map<String, Pair<QuantizedLinear, String>> roles = new HashMap<>();
    private QuantizedLinear wholeOf;
    private QuantizedWeight whole;

    /**
     * Reads {@code root}'s quantized layers from the float weights in {@code floats}.
     *
     * @param root the model, its projections quantized ({@link Qlora#quantize}) after {@code
     *     floats} matched the float parameters
     * @param floats the float checkpoint
     */
    public QuantizingSource(Block root, ParameterSource floats) {
        this.floats = floats;
        for (Block block : StateDict.modules(root).values()) {
            if (block instanceof QuantizedLinear layer) {
                for (Pair<String, Parameter> pair : layer.getDirectParameters()) {
                    roles.put(pair.getValue().getId(), new Pair<>(layer, pair.getKey()));
                }
            }
        }
    }

    @Override
    public NDArray read(NDManager manager, Parameter parameter, long from, long to)
            throws IOException {
        Pair<QuantizedLinear, String> role = roles.get(parameter.getId());
        if (role == null || "bias".equals(role.getValue())) {
            return floats.read(manager, parameter, from, to);
        }
        QuantizedLinear layer = role.getKey();
        QuantConfig config = layer.getConfig();
        String name = role.getValue();
        if (QuantizedLinear.QUANT_MAP.equals(name)) {
            return manager.create(config.getQuantType().getCode())
                    .get(new NDIndex("{}:{}", from, to));
        }
        boolean plainScales = QuantizedLinear.ABSMAX.equals(name) && !config.isNested();
        if (QuantizedLinear.WEIGHT.equals(name) || plainScales) {
            return blocks(manager, layer, name, from, to);
        }
        QuantizedWeight weight = whole(manager, layer);
        if (weight == null) {
            return null;
        }
        try (NDManager scope = manager.newSubManager()) {
            NDArray value =
                    QuantizedLinear.arrays(weight, scope)
                            .get(name)
                            .flatten()
                            .get(new NDIndex("{}:{}", from, to));
            value.attach(manager);
            return value;
        }
    }

    /** Packed codes or plain scales from the whole blocks that cover elements [from, to). */
    private NDArray blocks(
            NDManager manager, QuantizedLinear layer, String name, long from, long to)
            throws IOException {
        QuantConfig config = layer.getConfig();
        int blockSize = config.getBlockSize();
        long count = layer.inFeatures() * layer.outFeatures();
        boolean codes = QuantizedLinear.WEIGHT.equals(name);
        // The values the elements stand for, widened to whole blocks.
        long firstBlock = (codes ? 2 * from : from * blockSize) / blockSize;
        long endBlock = codes ? BlockQuantizer.blocks(Math.min(2 * to, count), blockSize) : to;
        long start = firstBlock * blockSize;
        long end = Math.min(endBlock * blockSize, count);
        NDArray read = floats.read(manager, weightOf(layer), start, end);
        if (read == null) {
            return null;
        }
        float[] values = floatValues(read);
        int blocks = Math.toIntExact(endBlock - firstBlock);
        byte[] packed = new byte[(values.length + 1) / 2];
        float[] absmax = new float[blocks];
        BlockQuantizer.quantize4(
                config.getQuantType(), blockSize, values, 0, values.length, packed, 0, absmax, 0);
        if (!codes) {
            return manager.create(absmax);
        }
        int skip = Math.toIntExact(from - start / 2);
        byte[] wanted = new byte[Math.toIntExact(to - from)];
        System.arraycopy(packed, skip, wanted, 0, wanted.length);
        return QuantizedLinear.bytes(manager, wanted, new Shape(wanted.length));
    }

    /**
     * Returns a read's values as float32 and closes it: checkpoints hold float16 (Llama 2's files)
     * and bfloat16 weights as well as float32 ones.
     */
    private static float[] floatValues(NDArray read) {
        try (NDArray values = read) {
            if (values.getDataType() == DataType.FLOAT32) {
                return values.toFloatArray();
            }
            try (NDArray wide = values.toType(DataType.FLOAT32, true)) {
                return wide.toFloatArray();
            }
        }
    }

    /** The layer's weight quantized whole (kept until another layer's is asked for). */
    private QuantizedWeight whole(NDManager manager, QuantizedLinear layer) throws IOException {
        if (wholeOf != layer) {
            Parameter weight = weightOf(layer);
            long count = layer.inFeatures() * layer.outFeatures();
            NDArray read = floats.read(manager, weight, 0, count);
            if (read == null) {
                return null;
            }
            whole =
                    QuantizedWeight.quantize(
                            floatValues(read),
                            layer.getWeightShape().getShape(),
                            layer.getConfig());
            wholeOf = layer;
        }
        return whole;
    }

    private static Parameter weightOf(QuantizedLinear layer) {
        return layer.getOriginal().getParameters().get(QuantizedLinear.WEIGHT);
    }
}
