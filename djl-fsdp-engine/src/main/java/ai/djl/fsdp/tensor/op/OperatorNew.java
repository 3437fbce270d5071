package ai.djl.fsdp.tensor.op;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

/**
 * C++'s {@code operator new(size_t)}: memory that libtorch may later {@code delete}, such as an
 * optional argument's slot of a dispatcher call, or the {@code at::Tensor} a handle points to.
 * Bound with JNA's direct mapping (a static native method), as {@link
 * ai.djl.fsdp.tensor.DirectShim}'s functions are: a step calls it once per optional tensor.
 */
final class OperatorNew {

    static {
        Native.register(OperatorNew.class, NativeLibrary.getInstance("libstdc++.so.6"));
    }

    private OperatorNew() {}

    /**
     * Allocates {@code bytes} with C++'s {@code operator new}.
     *
     * @param bytes the size
     * @return the memory, uninitialized
     */
    static Pointer allocate(long bytes) {
        return new Pointer(_Znwm(bytes));
    }

    /** {@code operator new(unsigned long)} by its mangled name. */
    private static native long _Znwm(long bytes);
}
