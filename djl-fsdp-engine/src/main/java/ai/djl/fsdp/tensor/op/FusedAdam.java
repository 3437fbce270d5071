package ai.djl.fsdp.tensor.op;

import ai.djl.Device;
import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import ai.djl.pytorch.engine.PtNDArray;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;

/**
 * libtorch's fused AdamW update on the CPU ({@code torch.optim.AdamW(fused=True)}) over one set of
 * weights, gradient and moments: one kernel reads them once and writes the weights and moments
 * back, where the same formula in separate operators makes about a dozen passes over them, each a
 * call from Java. Adam's L2 decay is AdamW's update with no decay of a gradient that holds the L2
 * term already, which its caller adds.
 *
 * <p>With the step {@code t}, the learning rate {@code lr} and the weight decay {@code wd}, as
 * PyTorch's fused kernel computes it, each coefficient computed in double and rounded to the
 * arrays' type:
 *
 * <pre>
 * p = p * (1 - lr * wd)
 * m = m + (1 - beta1) * (g - m)           (where the CPU has one, one fused multiply-add)
 * v = v * beta2 + (1 - beta2) * g * g
 * p = p + (-lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * </pre>
 *
 * <p>The operator {@code _fused_adamw_} takes lists of tensors, which libtorch 2.7.1's stable shim
 * cannot pass, so this calls its C++ entry point ({@code at::_ops::_fused_adamw_::call}) as {@link
 * FusedActivation} calls GELU's, on Linux x86-64 where it is exported (see {@link
 * LibtorchEntryPoints}). Under the System V ABI each list, a {@code c10::ArrayRef<at::Tensor>} of a
 * pointer and a length, travels as those two words: the first three lists in the six integer
 * registers, the other three, the flags and the two absent optional tensors on the stack in order,
 * the five coefficients in vector registers. A list of one tensor points at the tensor itself: a
 * DJL handle is an {@code at::Tensor*}.
 *
 * <p>The kernel trusts its arrays: it walks each one's memory for the weights' element count in the
 * weights' type, and a C++ exception cannot cross this call (it would end the process). So {@link
 * #of} takes only what the kernel reads correctly: dense PyTorch-engine arrays on the CPU, all four
 * of float32 or all of float64, of one size, each contiguous. Elsewhere, or with the system
 * property {@value #FUSED_PROPERTY} set to {@code false}, the caller runs the composed formula.
 */
public final class FusedAdam {

    /** The system property that turns the fused update off ({@code false}). */
    public static final String FUSED_PROPERTY = "ai.djl.fsdp.fusedAdam";

    private static final String ADAMW_ENTRY =
            "_ZN2at4_ops13_fused_adamw_4callEN3c108ArrayRefINS_6TensorEEES5_S5_S5_S5_S5_dddddbbRKSt8optionalIS4_ES9_";

    /**
     * An absent {@code std::optional<at::Tensor>}: libstdc++ lays it out as the tensor's pointer
     * and then its engaged flag, both zero here. Read only; for the life of the process.
     */
    private static final Memory NO_TENSOR = new Memory(16);

    static {
        NO_TENSOR.clear();
    }

    private final NDArray weight;
    private final NDArray grad;
    private final NDArray mean;
    private final NDArray variance;

    private FusedAdam(NDArray weight, NDArray grad, NDArray mean, NDArray variance) {
        this.weight = weight;
        this.grad = grad;
        this.mean = mean;
        this.variance = variance;
    }

    /**
     * Returns the fused update of these arrays, or null where the kernel cannot take them (or the
     * entry point is not bound in this process): the caller then runs the composed formula.
     *
     * @param weight the weights, updated in place
     * @param grad the gradient, read only
     * @param mean the first moment, updated in place
     * @param variance the second moment, updated in place
     * @return the update, valid while the four arrays are open; or null
     */
    public static FusedAdam of(NDArray weight, NDArray grad, NDArray mean, NDArray variance) {
        if (!Entry.BOUND) {
            return null;
        }
        DataType type = weight.getDataType();
        if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
            return null;
        }
        long size = weight.size();
        for (NDArray array : new NDArray[] {weight, grad, mean, variance}) {
            if (!(array instanceof PtNDArray)
                    || array.getSparseFormat() != SparseFormat.DENSE
                    || !Device.Type.CPU.equals(array.getDevice().getDeviceType())
                    || array.getDataType() != type
                    || array.size() != size
                    || !TensorMemory.isContiguous(array)) {
                return null;
            }
        }
        return new FusedAdam(weight, grad, mean, variance);
    }

    /**
     * Updates the weights and both moments in place by one AdamW step; the gradient is read only.
     *
     * @param step the step, from 1
     * @param rate the learning rate
     * @param beta1 the first moment's decay rate
     * @param beta2 the second moment's decay rate
     * @param weightDecay the decoupled weight decay ({@code p *= 1 - lr * wd}); 0 for none
     * @param epsilon the term added to the denominator
     * @throws IllegalArgumentException if the step is not positive
     * @throws IllegalStateException if one of the arrays was closed
     */
    public void update(
            int step, double rate, double beta1, double beta2, double weightDecay, double epsilon) {
        if (step < 1) {
            throw new IllegalArgumentException("Adam's step counts from 1, got " + step);
        }
        // DJL's handle of a closed array throws here, before any native call.
        long[] tensors = {
            TensorMemory.ptHandle(weight),
            TensorMemory.ptHandle(grad),
            TensorMemory.ptHandle(mean),
            TensorMemory.ptHandle(variance)
        };
        // Not recorded, and allowed in place on a leaf that records gradients (a DJL parameter):
        // the update is no operation of a graph, and libtorch has no derivative for it.
        Autograd.withGradMode(
                false,
                () -> {
                    Entry.adamW(tensors, step, rate, beta1, beta2, weightDecay, epsilon);
                    return null;
                });
    }

    /**
     * Returns whether {@link #of} can return an update in this process: on Linux x86-64, where
     * libtorch exports the entry point, unless {@value #FUSED_PROPERTY} is {@code false}.
     */
    public static boolean isBound() {
        return Entry.BOUND;
    }

    /**
     * The float32 scalar tensor the kernel reads the step from ({@code state_steps}), over native
     * memory of this class's, for the life of the process: writing the memory costs less than
     * making a tensor for each call (11 µs). One for all threads: {@link Entry#adamW} holds it
     * while the kernel runs. Made on first use, when DJL's engine is loaded.
     */
    private static final class StepCount {

        static final Memory VALUE = new Memory(Float.BYTES);
        static final long TENSOR = TensorMemory.ptHandle(wrap());

        private StepCount() {}

        private static NDArray wrap() {
            NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
            manager.setName("fused-adam-step");
            return BlobTensors.wrap(
                    Pointer.nativeValue(VALUE),
                    VALUE.size(),
                    Device.cpu(),
                    manager,
                    new Shape(),
                    Precision.FLOAT32,
                    0);
        }
    }

    /** The entry point, bound on first use where the fused update is taken. */
    private static final class Entry {

        static final boolean BOUND =
                LibtorchEntryPoints.bind(
                        Entry.class,
                        FUSED_PROPERTY,
                        ADAMW_ENTRY,
                        "Adam's update runs in DJL's operators");

        private Entry() {}

        /**
         * {@code _fused_adamw_} on lists of one tensor each (weights, gradient, moments; no AMSGrad
         * maxima), the step written to {@link StepCount}, no gradient scale and no overflow flag.
         */
        static void adamW(
                long[] t,
                int step,
                double rate,
                double beta1,
                double beta2,
                double weightDecay,
                double epsilon) {
            long none = Pointer.nativeValue(NO_TENSOR);
            synchronized (StepCount.class) {
                StepCount.VALUE.setFloat(0, step);
                _ZN2at4_ops13_fused_adamw_4callEN3c108ArrayRefINS_6TensorEEES5_S5_S5_S5_S5_dddddbbRKSt8optionalIS4_ES9_(
                        t[0],
                        1,
                        t[1],
                        1,
                        t[2],
                        1,
                        t[3],
                        1,
                        0,
                        0,
                        StepCount.TENSOR,
                        1,
                        rate,
                        beta1,
                        beta2,
                        weightDecay,
                        epsilon,
                        0,
                        0,
                        none,
                        none);
            }
        }

        // Each list is (data, length); then lr, beta1, beta2, weight_decay, eps; amsgrad,
        // maximize (C++ bools, passed as ints: the callee reads the low byte); grad_scale,
        // found_inf.
        private static native void
                _ZN2at4_ops13_fused_adamw_4callEN3c108ArrayRefINS_6TensorEEES5_S5_S5_S5_S5_dddddbbRKSt8optionalIS4_ES9_(
                        long params,
                        long paramCount,
                        long grads,
                        long gradCount,
                        long expAvgs,
                        long expAvgCount,
                        long expAvgSqs,
                        long expAvgSqCount,
                        long maxExpAvgSqs,
                        long maxExpAvgSqCount,
                        long stateSteps,
                        long stateStepCount,
                        double lr,
                        double beta1,
                        double beta2,
                        double weightDecay,
                        double eps,
                        int amsgrad,
                        int maximize,
                        long gradScale,
                        long foundInf);
    }
}
