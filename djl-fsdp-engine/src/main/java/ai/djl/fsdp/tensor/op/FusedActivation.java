package ai.djl.fsdp.tensor.op;

import ai.djl.fsdp.tensor.OwnedArrays;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;

/**
 * libtorch's fused GELU in its tanh form ({@code torch.nn.functional.gelu(x, approximate='tanh')},
 * GPT-2's {@code gelu_new}), with autograd: one kernel forward that keeps only its input for
 * backward, and libtorch's fused {@code gelu_backward} in backward, where the same formula written
 * with DJL's operators runs eight elementwise kernels and keeps their intermediates.
 *
 * <p>The operator's only overload takes its form as a string ({@code gelu(Tensor self, *, str
 * approximate='none')}), and libtorch 2.7.1's stable shim cannot pass one through {@code
 * aoti_torch_call_dispatcher} (it rejects {@code str} in the schema: "Not yet supported conversion
 * from StableIValue to IValue for schema type: str"), so {@link DispatcherCall} cannot make this
 * call. It calls instead the operator's C++ entry point that {@code at::gelu} itself calls, {@code
 * at::_ops::gelu::call(const at::Tensor&, std::string_view)}, exported by {@code libtorch_cpu.so}:
 * it enters the dispatcher with the calling thread's keys, autograd included, just as the shim's
 * call does. DJL's own {@code gelu} is the exact (erf) form, which GPT-2 checkpoints were not
 * trained with.
 *
 * <p>The call follows the x86-64 System V C++ ABI of the libtorch DJL loads: the returned {@code
 * at::Tensor} (one pointer with a destructor) is constructed in memory the caller passes first,
 * here a slot from C++'s {@code operator new}, which thereby becomes a heap {@code at::Tensor*},
 * the very form of a DJL array's handle; the {@code std::string_view} (length, then characters)
 * travels in two registers.
 *
 * <p>That ABI is x86-64's only (aarch64 passes the result's memory in another register), so the
 * fused call is taken on Linux x86-64 alone, and only when the entry point is found; elsewhere, or
 * with the system property {@value #FUSED_PROPERTY} set to {@code false}, the same formula runs in
 * DJL's operators (one line on the log says so). Unlike the shim's calls, which return C++
 * exceptions as error codes, a C++ exception inside this call (libtorch out of memory, say) ends
 * the process: the arguments are checked here first, and the property is the way back to the
 * composed formula.
 */
public final class FusedActivation {

    /** The system property that turns the fused call off ({@code false}). */
    public static final String FUSED_PROPERTY = "ai.djl.fsdp.fusedGelu";

    private static final String GELU_ENTRY =
            "_ZN2at4_ops4gelu4callERKNS_6TensorESt17basic_string_viewIcSt11char_traitsIcEE";

    private static final String TANH_NAME = "tanh";

    /** The form's characters, in native memory for the life of the process. */
    private static final Memory TANH = new Memory(TANH_NAME.length());

    static {
        TANH.write(0, TANH_NAME.getBytes(StandardCharsets.US_ASCII), 0, TANH_NAME.length());
    }

    private static final float SQRT_2_OVER_PI = (float) Math.sqrt(2 / Math.PI);

    private FusedActivation() {}

    /**
     * Computes {@code 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))} in one kernel; its
     * gradient, when {@code x} is in a recorded graph, in one kernel too.
     *
     * @param x a floating-point PyTorch-engine array (float32, bfloat16 or float16)
     * @return the activation, in the manager of {@code x}
     * @throws IllegalArgumentException if {@code x} is not such an array (checked here: a C++
     *     exception cannot cross the fused call)
     */
    public static NDArray geluTanh(NDArray x) {
        if (!(x instanceof PtNDArray) || !(x.getManager() instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "fused GELU needs a PyTorch-engine array, got " + x.getClass().getName());
        }
        if (!Precision.isFloating(x)) {
            throw new IllegalArgumentException(
                    "fused GELU needs a floating-point array, got " + x.getDataType());
        }
        if (!Entry.BOUND) {
            return composedGeluTanh(x);
        }
        Pointer result = OperatorNew.allocate(Long.BYTES);
        Entry.gelu(
                Pointer.nativeValue(result),
                TensorMemory.ptHandle(x),
                TANH.size(),
                Pointer.nativeValue(TANH));
        return new PtNDArray((PtNDManager) x.getManager(), Pointer.nativeValue(result));
    }

    /**
     * The same function in DJL's operators (eight elementwise kernels, each keeping its
     * intermediate for backward): the fallback where the fused call is not taken.
     *
     * @param x a floating-point array
     * @return the activation, in the type of {@code x}
     */
    static NDArray composedGeluTanh(NDArray x) {
        NDArray cubic = x.pow(OwnedArrays.scalar(x, 3)).mul(OwnedArrays.scalar(x, 0.044715f));
        NDArray inner = x.add(cubic).mul(OwnedArrays.scalar(x, SQRT_2_OVER_PI));
        return x.mul(OwnedArrays.scalar(x, 0.5f)).mul(inner.tanh().add(1));
    }

    /** Whether {@link #geluTanh} takes libtorch's fused kernel in this process. */
    static boolean isFused() {
        return Entry.BOUND;
    }

    /**
     * The entry point, bound on first use with JNA's direct mapping (a static native method, as
     * {@link ai.djl.fsdp.tensor.DirectShim}'s are) in the libtorch that DJL loaded, where the fused
     * call is taken.
     */
    private static final class Entry {

        static final boolean BOUND = bind();

        private Entry() {}

        private static boolean bind() {
            return LibtorchEntryPoints.bind(
                    Entry.class, FUSED_PROPERTY, GELU_ENTRY, "GELU (tanh) runs in DJL's operators");
        }

        /**
         * {@code at::_ops::gelu::call(const at::Tensor&, std::string_view)} under the x86-64 C++
         * ABI: the result's memory, the tensor (a DJL handle is an {@code at::Tensor*}), then the
         * string view's length and characters.
         */
        static void gelu(long result, long self, long length, long chars) {
            _ZN2at4_ops4gelu4callERKNS_6TensorESt17basic_string_viewIcSt11char_traitsIcEE(
                    result, self, length, chars);
        }

        private static native void
                _ZN2at4_ops4gelu4callERKNS_6TensorESt17basic_string_viewIcSt11char_traitsIcEE(
                        long result, long self, long length, long chars);
    }
}
