package ai.djl.fsdp.tensor;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The C shim's functions a training step calls hundreds of times (every operator called by schema
 * name, {@code aten::linear} among them; every new array of a chosen type, every cast and every
 * question of a bfloat16 array's type), bound with JNA's direct mapping ({@link Native#register}):
 * a static native method each, where {@link AotiTorch}'s interface proxy reflects on the method and
 * converts every argument on every call, and a schema name is a C string made once, not one per
 * call. Tensor handles pass as {@code long}s, results come back in a {@code long[]}.
 */
public final class DirectShim {

    private static final Pointer EMPTY_NAME = cString("");
    private static final Map<String, Pointer> NAMES = new ConcurrentHashMap<>();

    static {
        Native.register(
                DirectShim.class,
                NativeLibrary.getInstance(
                        AotiTorch.directory().resolve("libtorch_cpu.so").toString()));
    }

    private DirectShim() {}

    /**
     * Returns a second handle to a tensor, as {@code new at::Tensor(*orig)}.
     *
     * @param handle a tensor handle
     * @return the new handle, which its receiver owns
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static long newTensorHandle(long handle) {
        long[] result = new long[1];
        TensorMemory.check(
                aoti_torch_new_tensor_handle(handle, result), "aoti_torch_new_tensor_handle");
        return result[0];
    }

    /**
     * Calls an operator by its schema name through the dispatcher, autograd included: {@code stack}
     * holds one {@code StableIValue} per schema argument and receives the returns.
     *
     * @param operator the schema name, such as {@code aten::linear}, no overload
     * @param stack the arguments, then the returns
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static void callDispatcher(String operator, long[] stack) {
        Pointer name = NAMES.computeIfAbsent(operator, DirectShim::cString);
        TensorMemory.check(
                aoti_torch_call_dispatcher(name, EMPTY_NAME, stack),
                "aoti_torch_call_dispatcher(" + operator + ")");
    }

    /**
     * Returns a new uninitialized tensor, as {@code at::empty_strided}.
     *
     * @param sizes its shape
     * @param strides its strides, in elements
     * @param dtype the shim's code of its element type
     * @param deviceType the shim's code of its device type
     * @param deviceIndex its device's index
     * @return the new handle, which its receiver owns
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static long emptyStrided(
            long[] sizes, long[] strides, int dtype, int deviceType, int deviceIndex) {
        long[] result = new long[1];
        TensorMemory.check(
                aoti_torch_empty_strided(
                        sizes.length, sizes, strides, dtype, deviceType, deviceIndex, result),
                "aoti_torch_empty_strided");
        return result[0];
    }

    /**
     * Copies {@code src} into {@code self} in place, converting the element type ({@code
     * Tensor::copy_}, recorded by autograd).
     *
     * @param self the tensor written
     * @param src the tensor read, of a shape that broadcasts to {@code self}'s
     * @param nonBlocking whether a copy between the host and a GPU may return before it is done
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static void copy(long self, long src, boolean nonBlocking) {
        TensorMemory.check(aoti_torch_copy_(self, src, nonBlocking ? 1 : 0), "aoti_torch_copy_");
    }

    /**
     * Returns the shim's code of a tensor's element type.
     *
     * @param tensor a tensor handle
     * @return its type's code
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static int dtype(long tensor) {
        int[] result = new int[1];
        TensorMemory.check(aoti_torch_get_dtype(tensor, result), "aoti_torch_get_dtype");
        return result[0];
    }

    /**
     * Multiplies two CPU matrices into {@code out}, as {@code at::cpu::mm_out(out, self, mat2)}.
     *
     * @param out the product's tensor, possibly a view with a row stride
     * @param self the left factor
     * @param mat2 the right factor
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static void mmOut(long out, long self, long mat2) {
        TensorMemory.check(aoti_torch_cpu_mm_out(out, self, mat2), "aoti_torch_cpu_mm_out");
    }

    /**
     * Returns whether a tensor's elements lie one after another in row-major order, as PyTorch's
     * {@code is_contiguous()} decides (the stride of an axis of length 1 does not matter).
     *
     * @param tensor a tensor handle
     * @return true for a contiguous tensor
     * @throws IllegalStateException if libtorch rejects the call
     */
    public static boolean isContiguous(long tensor) {
        long[] result = new long[1];
        TensorMemory.check(aoti_torch_get_dim(tensor, result), "aoti_torch_get_dim");
        int axes = (int) result[0];
        if (axes == 0) {
            return true;
        }
        TensorMemory.check(aoti_torch_get_sizes(tensor, result), "aoti_torch_get_sizes");
        long[] size = new Pointer(result[0]).getLongArray(0, axes);
        TensorMemory.check(aoti_torch_get_strides(tensor, result), "aoti_torch_get_strides");
        long[] stride = new Pointer(result[0]).getLongArray(0, axes);
        long expected = 1;
        for (int axis = axes - 1; axis >= 0; axis--) {
            if (size[axis] == 0) {
                return true;
            }
            if (size[axis] != 1 && stride[axis] != expected) {
                return false;
            }
            expected *= size[axis];
        }
        return true;
    }

    private static Pointer cString(String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        Memory memory = new Memory(bytes.length + 1L);
        memory.write(0, bytes, 0, bytes.length);
        memory.setByte(bytes.length, (byte) 0);
        return memory;
    }

    private static native int aoti_torch_new_tensor_handle(long orig, long[] newHandle);

    private static native int aoti_torch_empty_strided(
            long ndim,
            long[] sizes,
            long[] strides,
            int dtype,
            int deviceType,
            int deviceIndex,
            long[] newTensor);

    private static native int aoti_torch_copy_(long self, long src, int nonBlocking);

    private static native int aoti_torch_get_dtype(long tensor, int[] dtype);

    private static native int aoti_torch_get_dim(long tensor, long[] dim);

    private static native int aoti_torch_get_sizes(long tensor, long[] sizes);

    private static native int aoti_torch_get_strides(long tensor, long[] strides);

    private static native int aoti_torch_cpu_mm_out(long out, long self, long mat2);

    private static native int aoti_torch_call_dispatcher(
            Pointer opName, Pointer overloadName, long[] stack);
}
