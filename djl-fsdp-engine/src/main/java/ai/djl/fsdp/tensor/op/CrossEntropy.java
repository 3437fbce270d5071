package ai.djl.fsdp.tensor.op;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDManager;

/**
 * libtorch's {@code torch.nn.functional.cross_entropy} over rows of logits, summed, with autograd:
 * one composite operator (log-softmax, then the negative log-likelihood at each row's label) whose
 * backward is libtorch's two fused kernels, where the same loss written with DJL's operators takes
 * a dozen operators each way.
 *
 * <p>The call goes through the dispatcher ({@link DispatcherCall}), so autograd records the
 * operator's own backward.
 */
public final class CrossEntropy {

    private static final String OPERATOR = "aten::cross_entropy_loss";

    /** libtorch's {@code at::Reduction::Sum}. */
    private static final long SUM = 2;

    private CrossEntropy() {}

    /**
     * Returns {@code -sum_i log softmax(logits_i)[labels_i]} over the rows whose label is not
     * {@code ignored}.
     *
     * @param logits the logits {@code [rows, classes]}, floating point; the log-softmax runs in
     *     their type
     * @param labels the class of each row {@code [rows]}, int64, or {@code ignored}
     * @param ignored the label of rows that do not count (Hugging Face's -100)
     * @return the summed loss, a scalar of the logits' type, in their manager
     */
    public static NDArray sum(NDArray logits, NDArray labels, long ignored) {
        if (!(logits.getManager() instanceof PtNDManager)) {
            throw new IllegalArgumentException(
                    "cross entropy needs PyTorch-engine arrays, got "
                            + logits.getManager().getClass().getName());
        }
        // (self, target, weight?, reduction, ignore_index, label_smoothing) -> Tensor
        return DispatcherCall.of(OPERATOR, 6)
                .tensor(logits)
                .tensor(labels)
                .none()
                .integer(SUM)
                .integer(ignored)
                .floating(0)
                .call((PtNDManager) logits.getManager(), 1)[0];
    }
}
