package ai.djl.fsdp.tensor.op;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.ndarray.NDArray;
import java.util.function.BinaryOperator;

/**
 * Arithmetic of an array with a float scalar made on the array's own device ({@link
 * OwnedArrays#scalar}), for what runs every step. Each value's scalar is made once per device and
 * kept ({@link DeviceScalars}), not made anew per call.
 *
 * <p>DJL's {@code Number} overloads ({@code mul(0.5f)}, {@code addi(eps)}) make the scalar from
 * Java data: on a GPU that is a copy from pageable host memory, and such a copy waits until the
 * device has run everything queued before it. One of them per parameter per step keeps the host
 * from ever running ahead of the GPU. Here the scalar is filled on the device, a kernel queued like
 * any other. The arithmetic is unchanged: both are a float32 0-dimensional operand, which keeps a
 * floating array's own type (float16, bfloat16, float64). On the CPU it also keeps the scalar in
 * memory libtorch owns, as autograd may save it.
 */
public final class ScalarOps {

    private ScalarOps() {}

    /** Returns {@code array * value}. */
    public static NDArray mul(NDArray array, float value) {
        return with(array, value, NDArray::mul);
    }

    /** Multiplies {@code array} by {@code value} in place and returns it. */
    public static NDArray muli(NDArray array, float value) {
        return with(array, value, NDArray::muli);
    }

    /** Returns {@code array / value}. */
    public static NDArray div(NDArray array, float value) {
        return with(array, value, NDArray::div);
    }

    /** Divides {@code array} by {@code value} in place and returns it. */
    public static NDArray divi(NDArray array, float value) {
        return with(array, value, NDArray::divi);
    }

    /** Returns {@code array + value}. */
    public static NDArray add(NDArray array, float value) {
        return with(array, value, NDArray::add);
    }

    /** Adds {@code value} to {@code array} in place and returns it. */
    public static NDArray addi(NDArray array, float value) {
        return with(array, value, NDArray::addi);
    }

    /** Returns {@code max(array, value)} elementwise. */
    public static NDArray maximum(NDArray array, float value) {
        return with(array, value, NDArray::maximum);
    }

    /**
     * Returns whether each element of {@code array} differs from {@code value}, as booleans. An
     * integer array is compared in float32, so exactly only for elements and values below 2^24 in
     * magnitude (a label against -100, an id against 0).
     */
    public static NDArray neq(NDArray array, float value) {
        return with(array, value, NDArray::neq);
    }

    private static NDArray with(NDArray array, float value, BinaryOperator<NDArray> operator) {
        return operator.apply(array, DeviceScalars.of(array, value));
    }
}
