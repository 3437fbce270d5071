package ai.djl.fsdp.tensor.op;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

/**
 * C++'s {@code operator new(size_t)}: memory that libtorch may later {@code delete}, such as an
 * optional argument's slot of a dispatcher call, or the {@code at::Tensor} a handle points to.
 */
final class OperatorNew {

    private static final Function FUNCTION =
            NativeLibrary.getInstance("libstdc++.so.6").getFunction("_Znwm");

    private OperatorNew() {}

    /**
     * Allocates {@code bytes} with C++'s {@code operator new}.
     *
     * @param bytes the size
     * @return the memory, uninitialized
     */
    static Pointer allocate(long bytes) {
        return (Pointer) FUNCTION.invoke(Pointer.class, new Object[] {bytes});
    }
}
