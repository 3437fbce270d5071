package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ScalarOps} computes exactly what DJL's {@code Number} overloads compute, in the array's
 * own type, in place where asked, on float32 and bfloat16 arrays; its scalars, kept per value, stay
 * valid in a graph after the cache has dropped them.
 */
class ScalarOpsTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    private record Case(
            String name,
            BiFunction<NDArray, Float, NDArray> ours,
            BiFunction<NDArray, Float, NDArray> djl,
            boolean inPlace) {}

    private static final List<Case> CASES =
            List.of(
                    new Case("mul", ScalarOps::mul, NDArray::mul, false),
                    new Case("muli", ScalarOps::muli, NDArray::muli, true),
                    new Case("div", ScalarOps::div, NDArray::div, false),
                    new Case("divi", ScalarOps::divi, NDArray::divi, true),
                    new Case("add", ScalarOps::add, NDArray::add, false),
                    new Case("addi", ScalarOps::addi, NDArray::addi, true),
                    new Case("maximum", ScalarOps::maximum, NDArray::maximum, false));

    @Test
    void matchesDjlNumberOperatorsBitForBit() {
        NDArray values = manager.randomNormal(new Shape(64)).mul(3);
        for (Precision precision : List.of(Precision.FLOAT32, Precision.BFLOAT16)) {
            for (float scalar : new float[] {0.999f, 1e-8f, -3.25f, (float) (1 / Math.sqrt(7))}) {
                for (Case c : CASES) {
                    NDArray ourInput = precision.cast(values.duplicate());
                    NDArray djlInput = precision.cast(values.duplicate());
                    NDArray ours = c.ours().apply(ourInput, scalar);
                    NDArray expected = c.djl().apply(djlInput, scalar);
                    String what = c.name() + " by " + scalar + " in " + precision;
                    assertEquals(expected.getDataType(), ours.getDataType(), what);
                    assertArrayEquals(
                            Precision.FLOAT32.cast(expected).toFloatArray(),
                            Precision.FLOAT32.cast(ours).toFloatArray(),
                            what);
                    if (c.inPlace()) {
                        assertSame(ourInput, ours, what + ": not in place");
                    }
                }
            }
        }
        assertEquals(DataType.FLOAT32, values.getDataType());
    }

    @Test
    void aScalarAGraphSavedOutlivesTheCache() {
        NDArray x = manager.ones(new Shape(4));
        x.setRequiresGradient(true);
        NDArray y;
        NDArray first = DeviceScalars.of(x, 3f);
        assertSame(first, DeviceScalars.of(x, 3f), "made once per value");
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            y = ScalarOps.mul(x, 3f);
            // Enough other values to drop 3 from the cache and close its array.
            for (int i = 0; i <= DeviceScalars.CAPACITY; i++) {
                DeviceScalars.of(x, 100f + i);
            }
            collector.backward(y.sum());
        }
        assertArrayEquals(new float[] {3f, 3f, 3f, 3f}, x.getGradient().toFloatArray());
    }

    @Test
    void comparesIntegerLabelsExactly() {
        NDArray labels = manager.create(new long[] {-100, 0, 7, -100, 50_000, -99});
        NDArray ours = ScalarOps.neq(labels, -100);
        assertEquals(DataType.BOOLEAN, ours.getDataType());
        assertArrayEquals(labels.neq(-100).toBooleanArray(), ours.toBooleanArray());
    }
}
