package ai.djl.fsdp.tensor;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.Buffer;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;

/**
 * Arrays made from Java values whose memory libtorch owns, so they stay valid for as long as
 * anything in libtorch refers to them.
 *
 * <p>On the CPU, DJL's {@code NDManager.create(...)} from Java data, and every operator that takes
 * a {@code Number} ({@code mul(0.5f)} creates a scalar array the same way), does not copy into
 * libtorch: the tensor borrows a Java direct buffer that only the DJL handle keeps reachable.
 * Closing the handle lets the garbage collector free that memory, yet libtorch may still hold the
 * tensor: a view ({@code reshape}, {@code get}, {@code transpose}), or an operand autograd saved
 * for backward ({@code mul}, {@code div}, {@code pow} save the scalar). Reading it then reads freed
 * memory, silently, and only when the collector has run: gradients turn NaN depending on what ran
 * before. {@code docs/platform-facts.md} records the reproduction.
 *
 * <p>So: Java data that becomes part of a model, a graph or a long-lived array goes through {@link
 * #create}; a scalar operand of {@code mul}, {@code div}, {@code pow}, {@code maximum} or {@code
 * minimum} on an array that may be in a gradient graph is {@link #scalar}. ({@code add} and {@code
 * sub} with a {@code Number} are safe: autograd saves neither operand, and the result is computed
 * before DJL closes the scalar.)
 */
public final class OwnedArrays {

    private OwnedArrays() {}

    /**
     * Creates an array from Java data in memory libtorch allocates and owns.
     *
     * @param manager the manager of the result
     * @param data the values, row-major; any buffer {@code NDManager.create} accepts
     * @param shape the shape
     * @param dataType the element type of the values; never {@code BFLOAT16}
     * @return a libtorch-owned copy of the values
     */
    public static NDArray create(NDManager manager, Buffer data, Shape shape, DataType dataType) {
        // The clone's storage is libtorch's; the borrowing original is released at once.
        try (NDArray borrowing = manager.create(data, shape, dataType)) {
            return borrowing.duplicate();
        }
    }

    /**
     * Creates a float32 array in memory libtorch owns.
     *
     * @param manager the manager of the result
     * @param data the values, row-major
     * @param shape the shape, of {@code data.length} elements
     * @return a libtorch-owned copy of the values
     */
    public static NDArray create(NDManager manager, float[] data, Shape shape) {
        return create(manager, FloatBuffer.wrap(data), shape, DataType.FLOAT32);
    }

    /**
     * Creates an int64 array in memory libtorch owns.
     *
     * @param manager the manager of the result
     * @param data the values, row-major
     * @param shape the shape, of {@code data.length} elements
     * @return a libtorch-owned copy of the values
     */
    public static NDArray create(NDManager manager, long[] data, Shape shape) {
        return create(manager, LongBuffer.wrap(data), shape, DataType.INT64);
    }

    /**
     * Returns a 0-dimensional float32 array of the value, made by libtorch, on the device and in
     * the manager of {@code like}: the operand to use instead of a {@code Number} where autograd
     * may save it. PyTorch's type promotion lets a 0-dimensional operand keep a floating {@code
     * like}'s own type (float16, bfloat16, float64).
     *
     * @param like the array the scalar will be combined with
     * @param value the value
     * @return the scalar array
     */
    public static NDArray scalar(NDArray like, float value) {
        return like.getManager().full(new Shape(), value, DataType.FLOAT32, like.getDevice());
    }
}
