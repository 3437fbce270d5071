package ai.djl.fsdp.tensor.op;

import ai.djl.fsdp.tensor.DirectShim;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Pointer;

/**
 * One call of a libtorch operator by its schema name ({@code aten::scaled_dot_product_attention})
 * through {@code aoti_torch_call_dispatcher}. Unlike the shim's per-kernel functions ({@code
 * aoti_torch_cpu_*} call the CPU kernel directly and record no {@code grad_fn}), a dispatcher call
 * passes through every dispatch key, autograd included: what DJL's JNI lacks, and what a custom
 * autograd function would otherwise be needed for.
 *
 * <p>The arguments are libtorch's {@code StableIValue}s, one 64-bit slot per schema argument, in
 * schema order, keyword-only arguments included: a tensor is a handle the call takes ownership of
 * (so each argument is a fresh handle to the caller's tensor), an integer itself, a double its
 * bits, a bool 0 or 1, {@code None} 0, and a present optional a pointer to a slot allocated with
 * C++ {@code operator new} (the call {@code delete}s it). The returns come back in the same slots,
 * tensors as new handles this class wraps for DJL.
 */
final class DispatcherCall {

    /** Spare zero slots (None, 0, false) beyond the arguments given, against a longer schema. */
    private static final int SPARE = 8;

    private final String operator;
    private final long[] stack;
    private int arguments;

    private DispatcherCall(String operator, int capacity) {
        this.operator = operator;
        this.stack = new long[capacity + SPARE];
    }

    /**
     * Starts a call.
     *
     * @param operator the schema name, such as {@code aten::scaled_dot_product_attention}
     * @param capacity at least the schema's argument count and return count
     * @return the call, to be given its arguments in schema order
     */
    static DispatcherCall of(String operator, int capacity) {
        return new DispatcherCall(operator, capacity);
    }

    DispatcherCall tensor(NDArray array) {
        return push(newHandle(array));
    }

    /** An optional tensor argument: {@code None} for null. */
    DispatcherCall optionalTensor(NDArray array) {
        if (array == null) {
            return push(0);
        }
        Pointer slot = OperatorNew.allocate(8);
        slot.setLong(0, newHandle(array));
        return push(Pointer.nativeValue(slot));
    }

    DispatcherCall integer(long value) {
        return push(value);
    }

    DispatcherCall floating(double value) {
        return push(Double.doubleToRawLongBits(value));
    }

    DispatcherCall bool(boolean value) {
        return push(value ? 1 : 0);
    }

    DispatcherCall none() {
        return push(0);
    }

    /**
     * Calls the operator and returns its tensor results, owned by {@code manager}.
     *
     * @param manager the manager of the results
     * @param returns how many tensors the schema returns
     * @return the results
     * @throws IllegalStateException if libtorch rejects the call (the arguments given so far may
     *     then leak their handles)
     */
    NDArray[] call(PtNDManager manager, int returns) {
        DirectShim.callDispatcher(operator, stack);
        NDArray[] results = new NDArray[returns];
        for (int i = 0; i < returns; i++) {
            results[i] = new PtNDArray(manager, stack[i]);
        }
        return results;
    }

    /**
     * Calls an operator whose schema returns one {@code bool}.
     *
     * @return what it returned
     * @throws IllegalStateException if libtorch rejects the call
     */
    boolean callForBoolean() {
        DirectShim.callDispatcher(operator, stack);
        // Only the slot's low byte is defined for a bool (seen: the others keep the argument's).
        return (stack[0] & 0xFF) != 0;
    }

    private DispatcherCall push(long value) {
        stack[arguments++] = value;
        return this;
    }

    private static long newHandle(NDArray array) {
        return DirectShim.newTensorHandle(TensorMemory.ptHandle(array));
    }
}
