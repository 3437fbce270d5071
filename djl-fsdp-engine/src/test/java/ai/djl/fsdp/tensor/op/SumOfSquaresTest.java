package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.Test;

/**
 * {@link SumOfSquares} sums the squares of a vector, float32 and float64 alike, into the manager it
 * is given, and refuses what is not a vector.
 */
class SumOfSquaresTest {

    @Test
    void sumsTheSquaresIntoTheManagerItIsGiven() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray vector = manager.randomNormal(new Shape(10_001));
            double expected = 0;
            for (float value : vector.toFloatArray()) {
                expected += (double) value * value;
            }
            NDArray sum;
            try (NDManager scope = manager.newSubManager()) {
                sum = SumOfSquares.of(vector, scope);
                assertSame(scope, sum.getManager());
                assertEquals(new Shape(), sum.getShape());
                assertEquals(DataType.FLOAT32, sum.getDataType());
                // float32 accumulation, in whatever order the kernel takes: a relative bound.
                assertEquals(expected, sum.getFloat(), 1e-5 * expected);
                NDArray wide = SumOfSquares.of(vector.toType(DataType.FLOAT64, false), scope);
                assertEquals(expected, wide.getDouble(), 1e-12 * expected);
            }
            assertTrue(sum.isReleased(), "closed with its manager");
            assertEquals(0f, SumOfSquares.of(manager.zeros(new Shape(0)), manager).getFloat());
        }
    }

    @Test
    void sumsAVectorLongerThanOneSliceSliceBySlice() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            NDArray vector = manager.randomNormal(new Shape(1_000_003));
            float whole = SumOfSquares.of(vector, manager).getFloat();
            NDArray sliced;
            try (NDManager scope = manager.newSubManager()) {
                sliced = SumOfSquares.of(vector, scope, 100_000);
                assertSame(scope, sliced.getManager());
                assertEquals(new Shape(), sliced.getShape());
                assertEquals(whole, sliced.getFloat(), 1e-5 * whole);
            }
            assertTrue(sliced.isReleased(), "closed with its manager");
        }
    }

    @Test
    void refusesAnArrayThatIsNotAVector() {
        try (NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch")) {
            IllegalArgumentException refused =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> SumOfSquares.of(manager.ones(new Shape(2, 3)), manager));
            assertTrue(refused.getMessage().contains("(2, 3)"), refused.getMessage());
        }
    }
}
