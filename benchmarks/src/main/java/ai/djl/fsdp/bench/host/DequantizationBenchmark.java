package ai.djl.fsdp.bench.host;

import ai.djl.fsdp.qlora.QuantizedLinear;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * What a QLoRA unit pays to decode its 4-bit base each time it computes (issue #47): the seven
 * projections of a Llama-3.2-1B-shaped decoder layer (hidden 2048, intermediate 8192, 32 query and
 * 8 key-value heads of 64: 60.8M weights), held as bitsandbytes' packed NF4 codes, plain or with
 * double quantization, decoded by {@link QuantizedLinear#weight} as its forward and recompute
 * decode them, to float32 or to bfloat16 (the compute type of a bf16 run).
 */
public class DequantizationBenchmark extends HostBenchmark {

    private static final int HIDDEN = 2048;
    private static final int KV = 8 * 64;
    private static final int INTERMEDIATE = 8192;

    /** The scales: {@code plain} float32, or {@code nested} (double quantization). */
    @Param({"plain", "nested"})
    public String scales;

    /** The decoded weight's precision: {@code fp32} or {@code bf16}. */
    @Param({"fp32", "bf16"})
    public String compute;

    private final List<QuantizedLinear> layers = new ArrayList<>();
    private final List<List<NDArray>> arrays = new ArrayList<>();
    private NDArray like;

    /** Quantizes the layer's seven projections, drawn from a normal distribution. */
    @Setup(Level.Trial)
    public void setUp() {
        QuantConfig config =
                QuantConfig.builder()
                        .setQuantType(QuantType.NF4)
                        .optNested("nested".equals(scales))
                        .build();
        int[][] shapes = {
            {HIDDEN, HIDDEN},
            {HIDDEN, KV},
            {HIDDEN, KV},
            {HIDDEN, HIDDEN},
            {HIDDEN, INTERMEDIATE},
            {HIDDEN, INTERMEDIATE},
            {INTERMEDIATE, HIDDEN}
        };
        for (int[] shape : shapes) {
            QuantizedLinear layer =
                    new QuantizedLinear(new Linear(shape[0], shape[1], false, 0.02f), config);
            layer.initialize(manager, DataType.FLOAT32, new Shape(1, shape[0]));
            List<NDArray> values = new ArrayList<>();
            for (Parameter parameter : layer.getParameters().values()) {
                values.add(parameter.getArray());
            }
            layers.add(layer);
            arrays.add(values);
        }
        like = Precision.of(compute).zeros(manager, new Shape(1));
    }

    /** Decodes every projection of the unit, one at a time, each freed before the next. */
    @Benchmark
    public void decodeUnit() {
        for (int i = 0; i < layers.size(); i++) {
            try (NDManager scope = manager.newSubManager()) {
                arrays.get(i).forEach(array -> array.tempAttach(scope));
                layers.get(i).weight(new ParameterStore(scope, false), like, false).close();
            }
        }
    }
}
