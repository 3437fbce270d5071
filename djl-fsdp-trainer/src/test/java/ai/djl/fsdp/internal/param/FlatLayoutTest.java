package ai.djl.fsdp.internal.param;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each parameter's view into a flat buffer: its shape, its place, and the buffer left open. */
class FlatLayoutTest {

    @Test
    void viewsLieInTheBufferWithTheirShapesAndLeaveItOpen() {
        // One vector unpadded (DJL's split at no boundary returns the buffer itself), one vector
        // padded, and a matrix, an empty parameter and a vector padded.
        List<List<Shape>> layouts =
                List.of(
                        List.of(new Shape(4)),
                        List.of(new Shape(5)),
                        List.of(new Shape(2, 2), new Shape(0), new Shape(3)));
        for (List<Shape> shapes : layouts) {
            FlatLayout layout = new FlatLayout(shapes, 2);
            try (NDManager manager = NDManager.newBaseManager()) {
                NDArray base = manager.arange(0f, (float) layout.getPaddedNumel());
                List<NDArray> views = layout.viewsOf(base);
                assertEquals(shapes.size(), views.size());
                for (int i = 0; i < shapes.size(); i++) {
                    NDArray view = views.get(i);
                    assertNotSame(base, view);
                    assertEquals(shapes.get(i), view.getShape());
                    long offset = layout.getOffset(i);
                    float[] expected = new float[(int) shapes.get(i).size()];
                    for (int j = 0; j < expected.length; j++) {
                        expected[j] = offset + j;
                    }
                    assertArrayEquals(expected, view.toFloatArray());
                    if (expected.length > 0) {
                        assertEquals(
                                TensorMemory.dataPointer(base) + 4 * offset,
                                TensorMemory.dataPointer(view));
                    }
                    view.close();
                }
                assertFalse(base.isReleased(), "the buffer stays open");
                assertEquals(layout.getPaddedNumel(), base.toFloatArray().length);
            }
        }
    }
}
