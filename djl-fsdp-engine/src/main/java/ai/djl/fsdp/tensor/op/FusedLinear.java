package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * libtorch's {@code torch.nn.functional.linear}, {@code y = x W^T + b}, with autograd. For an input
 * of two dimensions, or a contiguous one of three, libtorch computes it as one {@code addmm}: the
 * bias is the product's starting value, so no separate product array is made and then added to
 * (DJL's {@code matMul} followed by {@code add}), and backward sums the bias gradient from the same
 * output gradient. Other inputs take libtorch's {@code matmul} then an in-place add.
 *
 * <p>The call goes through the dispatcher ({@link DispatcherCall}), so autograd records {@code
 * addmm}'s own backward.
 */
public final class FusedLinear {

    private static final String OPERATOR = "aten::linear";

    private FusedLinear() {}

    /**
     * Computes {@code x W^T + b}.
     *
     * @param x the input {@code [..., in]}
     * @param weight the weight {@code [out, in]}; a transposed view of an input-major {@code [in,
     *     out]} weight is read in place
     * @param bias the bias {@code [out]}, or null for none
     * @return the output {@code [..., out]}, in the input's manager
     */
    public static NDArray apply(NDArray x, NDArray weight, NDArray bias) {
        if (!(x.getManager() instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "fused linear needs PyTorch-engine arrays, got "
                            + x.getManager().getClass().getName());
        }
        // (input, weight, bias?) -> Tensor
        return DispatcherCall.of(OPERATOR, 3)
                .tensor(x)
                .tensor(weight)
                .optionalTensor(bias)
                .call((PtNDManager) x.getManager(), 1)[0];
    }
}
