package ai.djl.fsdp.tensor;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.engine.PtNDManager;
import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;

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
 */
public final class FusedActivation {

    private static final String GELU_ENTRY =
            "_ZN2at4_ops4gelu4callERKNS_6TensorESt17basic_string_viewIcSt11char_traitsIcEE";

    private static final String TANH = "tanh";

    private FusedActivation() {}

    /**
     * Computes {@code 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))} in one kernel; its
     * gradient, when {@code x} is in a recorded graph, in one kernel too.
     *
     * @param x a floating-point PyTorch-engine array (float32, bfloat16 or float16)
     * @return the activation, in the manager of {@code x}
     * @throws IllegalArgumentException if {@code x} is not such an array (checked here: a C++
     *     exception cannot cross this call)
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
        Pointer result = OperatorNew.allocate(Long.BYTES);
        Entry.GELU.invoke(
                Void.class,
                new Object[] {result, TensorMemory.handle(x), (long) TANH.length(), TANH});
        return new PtNDArray((PtNDManager) x.getManager(), Pointer.nativeValue(result));
    }

    /** The entry point, looked up in the libtorch that DJL loaded on first use. */
    private static final class Entry {

        static final Function GELU =
                NativeLibrary.getInstance(
                                AotiTorch.Loaded.DIRECTORY.resolve("libtorch_cpu.so").toString())
                        .getFunction(GELU_ENTRY);

        private Entry() {}
    }
}
