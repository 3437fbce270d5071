package ai.djl.fsdp.zoo.lora;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import ai.djl.engine.Engine;
import ai.djl.fsdp.checkpoint.Placeholder;
import ai.djl.fsdp.qlora.QuantizedLinear;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.quant.QuantType;
import ai.djl.fsdp.quant.QuantizedWeight;
import ai.djl.fsdp.zoo.TestModels;
import ai.djl.fsdp.zoo.nn.Linear;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import org.junit.jupiter.api.Test;

/**
 * How a fresh 4-bit layer starts: drawing its float weight and quantizing it from the tensor's
 * memory gives the codes and scales that quantizing the same draw as a Java array gives; and a
 * layer whose values another rank sends ({@link Placeholder}) draws and quantizes nothing, its
 * parameters placeholders of the types the codes and scales have.
 */
class QuantizedLinearStartTest {

    private static final long IN = 96;
    private static final long OUT = 40;
    private static final QuantConfig NESTED =
            QuantConfig.builder().setQuantType(QuantType.NF4).optNested(true).build();

    @Test
    void drawnWeightQuantizesAsItsValues() {
        try (NDManager manager = TestModels.newManager()) {
            Engine.getEngine("PyTorch").setRandomSeed(7);
            float[] drawn =
                    new Linear(IN, OUT, true, 0.02f)
                            .getParameters()
                            .get("weight")
                            .getInitializer()
                            .initialize(manager, new Shape(OUT, IN), DataType.FLOAT32)
                            .toFloatArray();
            QuantizedWeight expected =
                    QuantizedWeight.quantize(drawn, new long[] {OUT, IN}, NESTED);

            Engine.getEngine("PyTorch").setRandomSeed(7);
            QuantizedLinear layer = new QuantizedLinear(new Linear(IN, OUT, true, 0.02f), NESTED);
            layer.initialize(manager, DataType.FLOAT32, new Shape(1, IN));
            assertArrayEquals(
                    expected.getPacked(),
                    layer.getParameters().get("weight").getArray().toByteArray());
            assertArrayEquals(
                    expected.getNested().getCodes(),
                    layer.getParameters().get("weight.absmax").getArray().toByteArray());
            assertArrayEquals(
                    expected.getNested().getAbsmax(),
                    layer.getParameters().get("weight.nested_absmax").getArray().toFloatArray());
        }
    }

    @Test
    void placeholderLayerDrawsAndQuantizesNothing() {
        try (NDManager manager = TestModels.newManager()) {
            Linear original = new Linear(IN, OUT, true, 0.02f);
            QuantizedLinear layer = new QuantizedLinear(original, NESTED);
            for (Pair<String, Parameter> pair : layer.getParameters()) {
                pair.getValue().setInitializer(Placeholder.INSTANCE);
            }
            original.getParameters().get("weight").setInitializer(Placeholder.INSTANCE);
            layer.initialize(manager, DataType.FLOAT32, new Shape(1, IN));
            assertFalse(
                    original.getParameters().get("weight").isInitialized(),
                    "no float weight was made");
            for (Pair<String, Parameter> pair : layer.getParameters()) {
                NDArray array = pair.getValue().getArray();
                String name = pair.getKey();
                boolean codes = "weight".equals(name) || "weight.absmax".equals(name);
                assertEquals(codes ? DataType.UINT8 : DataType.FLOAT32, array.getDataType(), name);
                assertEquals(pair.getValue().getShape(), array.getShape(), name);
            }
        }
    }
}
