package ai.djl.fsdp.tensor.op;

import ai.djl.Device;
import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * libtorch's fused AdamW update on the CPU ({@code torch.optim.AdamW(fused=True)}): one kernel
 * reads the weights, the gradient and both moments once and writes the weights and moments back,
 * where the same formula in separate operators makes about a dozen passes over them, each a call
 * from Java. Adam's L2 decay is AdamW's update with no decay of a gradient that holds the L2 term
 * already, which its caller adds.
 *
 * <p>With the step {@code t}, the learning rate {@code lr} and the weight decay {@code wd}, as
 * PyTorch's fused kernel computes it (in the arrays' type, the coefficients in double):
 *
 * <pre>
 * p = p * (1 - lr * wd)
 * m = m + (1 - beta1) * (g - m)           (one fused multiply-add)
 * v = v * beta2 + (1 - beta2) * g * g
 * p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
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
 * <p>A C++ exception cannot cross this call (it would end the process), so {@link #supports} checks
 * in Java everything the kernel checks: the arrays are PyTorch-engine arrays on the CPU, of one
 * floating type, of one size, contiguous. Where it answers false, or with the system property
 * {@value #FUSED_PROPERTY} set to {@code false}, the caller runs the composed formula.
 */
public final class FusedAdam {

    /** The system property that turns the fused update off ({@code false}). */
    public static final String FUSED_PROPERTY = "ai.djl.fsdp.fusedAdam";

    private static final Logger logger = LoggerFactory.getLogger(FusedAdam.class);

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

    /** The step the kernel reads, one slot per thread. */
    private static final ThreadLocal<StepCount> STEP = ThreadLocal.withInitial(StepCount::new);

    private FusedAdam() {}

    /**
     * Returns whether the fused update can run on these arrays in this process: the entry points
     * are bound, and the arrays are contiguous PyTorch-engine CPU arrays of one size and of float32
     * or float64.
     *
     * @param weight the weights
     * @param grad the gradient
     * @param mean the first moment
     * @param variance the second moment
     * @return whether {@link #update} may be called with them
     */
    public static boolean supports(NDArray weight, NDArray grad, NDArray mean, NDArray variance) {
        if (!Entry.BOUND) {
            return false;
        }
        DataType type = weight.getDataType();
        if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
            return false;
        }
        long size = weight.size();
        for (NDArray array : new NDArray[] {weight, grad, mean, variance}) {
            if (!(array instanceof PtNDArray)
                    || !Device.Type.CPU.equals(array.getDevice().getDeviceType())
                    || array.getDataType() != type
                    || array.size() != size
                    || !TensorMemory.isContiguous(array)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Updates {@code weight}, {@code mean} and {@code variance} in place by one AdamW step; {@code
     * grad} is read only.
     *
     * @param weight the weights
     * @param grad the gradient
     * @param mean the first moment
     * @param variance the second moment
     * @param step the step, from 1
     * @param rate the learning rate
     * @param beta1 the first moment's decay rate
     * @param beta2 the second moment's decay rate
     * @param weightDecay the decoupled weight decay ({@code p *= 1 - lr * wd}); 0 for none
     * @param epsilon the term added to the denominator
     * @throws IllegalArgumentException if {@link #supports} is false for the arrays or the step is
     *     not positive
     */
    public static void update(
            NDArray weight,
            NDArray grad,
            NDArray mean,
            NDArray variance,
            int step,
            double rate,
            double beta1,
            double beta2,
            double weightDecay,
            double epsilon) {
        if (!supports(weight, grad, mean, variance)) {
            throw new IllegalArgumentException(
                    "The fused Adam update needs contiguous CPU arrays of one size and of float32"
                            + " or float64, and libtorch's entry point: check FusedAdam.supports"
                            + " first");
        }
        if (step < 1) {
            throw new IllegalArgumentException("Adam's step counts from 1, got " + step);
        }
        long[] tensors = {
            TensorMemory.ptHandle(weight),
            TensorMemory.ptHandle(grad),
            TensorMemory.ptHandle(mean),
            TensorMemory.ptHandle(variance)
        };
        long steps = STEP.get().set(step);
        long none = Pointer.nativeValue(NO_TENSOR);
        // Not recorded, and allowed in place on a leaf that records gradients (a DJL parameter):
        // the update is no operation of a graph, and libtorch has no derivative for it.
        Autograd.withGradMode(
                false,
                () -> {
                    Entry.adamW(tensors, steps, rate, beta1, beta2, weightDecay, epsilon, none);
                    return null;
                });
    }

    /** Whether {@link #update} takes libtorch's fused kernel in this process. */
    static boolean isBound() {
        return Entry.BOUND;
    }

    /**
     * A float32 scalar tensor over native memory of this class's, for {@code state_steps}: the
     * kernel reads the step from a tensor, and writing the memory is cheaper than making a tensor
     * for each call. The tensor's manager stays open for the thread's life.
     */
    private static final class StepCount {

        private final Memory value = new Memory(Float.BYTES);
        private final NDArray tensor;

        StepCount() {
            NDManager manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
            manager.setName("fused-adam-step");
            tensor =
                    BlobTensors.wrap(
                            Pointer.nativeValue(value),
                            value.size(),
                            Device.cpu(),
                            manager,
                            new Shape(),
                            Precision.FLOAT32,
                            0);
        }

        /** Writes {@code step} and returns the tensor's handle. */
        long set(int step) {
            value.setFloat(0, step);
            return TensorMemory.ptHandle(tensor);
        }
    }

    /** The entry points, bound on first use where the fused update is taken. */
    private static final class Entry {

        static final boolean BOUND = bind();

        private Entry() {}

        private static boolean bind() {
            String why = LibtorchEntryPoints.bind(Entry.class, FUSED_PROPERTY, ADAMW_ENTRY);
            if (why != null) {
                logger.info(
                        "Adam's update runs in DJL's operators, not libtorch's fused kernel: {}",
                        why);
            }
            return why == null;
        }

        /**
         * {@code _fused_adamw_} on lists of one tensor each (weights, gradient, moments; no AMSGrad
         * maxima), no gradient scale and no overflow flag.
         */
        static void adamW(
                long[] t,
                long steps,
                double rate,
                double beta1,
                double beta2,
                double weightDecay,
                double epsilon,
                long none) {
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
                    steps,
                    1,
                    rate,
                    beta1,
                    beta2,
                    weightDecay,
                    epsilon,
                    (byte) 0,
                    (byte) 0,
                    none,
                    none);
        }

        // Each list is (data, length); then lr, beta1, beta2, weight_decay, eps; amsgrad,
        // maximize; grad_scale, found_inf.
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
                        byte amsgrad,
                        byte maximize,
                        long gradScale,
                        long foundInf);
    }
}
