package ai.djl.fsdp.tensor.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Products into a given array against DJL's product: a float32 output wide enough to be written in
 * column blocks (of two sizes) and a narrow one written whole, the right factor read through a
 * transposed view as the loss's head reads its weight.
 */
class InPlaceTest {

    private NDManager manager;

    @BeforeEach
    void openManager() {
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        manager.getEngine().setRandomSeed(41);
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    @Test
    void wideFloat32ProductInColumnBlocksEqualsTheProduct() {
        long columns = InPlace.FLOAT32_WIDE_COLUMNS + 77;
        compare(new Shape(5, 24), new Shape(columns, 24));
    }

    @Test
    void narrowProductEqualsTheProduct() {
        compare(new Shape(5, 24), new Shape(40, 24));
    }

    @Test
    void wideBfloat16ProductEqualsTheProduct() {
        NDArray a = Precision.BFLOAT16.cast(manager.randomNormal(new Shape(3, 16)));
        NDArray w = Precision.BFLOAT16.cast(manager.randomNormal(new Shape(3000, 16)));
        NDArray out = Precision.BFLOAT16.empty(manager, new Shape(3, 3000));
        InPlace.mm(out, a, w.transpose());
        float[] expected = Precision.FLOAT32.cast(a.matMul(w.transpose())).toFloatArray();
        assertArrayEquals(expected, Precision.FLOAT32.cast(out).toFloatArray(), 0f);
    }

    @Test
    void bfloat16AddedToFloat32InBlocksEqualsTheMixedAdd() {
        // More rows than one block holds, and a partial last block.
        long width = 7;
        long rows = 2 * (InPlace.WIDEN_BLOCK_ELEMENTS / width) + 5;
        NDArray out = manager.randomNormal(new Shape(rows, width));
        NDArray values = Precision.BFLOAT16.cast(manager.randomNormal(new Shape(rows, width)));
        float[] expected = out.add(Precision.FLOAT32.cast(values)).toFloatArray();
        InPlace.addWidened(out, values);
        assertArrayEquals(expected, out.toFloatArray(), 0f);
    }

    /** {@code a w^T} into a fresh array against {@code matMul}. */
    private void compare(Shape left, Shape weight) {
        NDArray a = manager.randomNormal(left);
        NDArray w = manager.randomNormal(weight);
        NDArray out = Precision.FLOAT32.empty(manager, new Shape(left.get(0), weight.get(0)));
        InPlace.mm(out, a, w.transpose());
        NDArray expected = a.matMul(w.transpose());
        assertEquals(expected.getShape(), out.getShape());
        assertArrayEquals(expected.toFloatArray(), out.toFloatArray(), 1e-4f);
        // Added to, the same product again doubles it.
        InPlace.addMm(out, a, w.transpose());
        assertArrayEquals(expected.mul(2).toFloatArray(), out.toFloatArray(), 2e-4f);
    }
}
