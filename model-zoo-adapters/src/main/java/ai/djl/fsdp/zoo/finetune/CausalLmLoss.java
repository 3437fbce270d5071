package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.tensor.Autograd;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TensorMemory;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.loss.Loss;

/**
 * The causal language-modelling loss: the mean cross-entropy of the next token over the positions
 * whose label is a token. Predictions are {@code logits [B, T, vocab]}; labels are the token ids
 * {@code [B, T]} that follow each input position, or {@link Sequences#IGNORE} (-100, as in Hugging
 * Face) where nothing is predicted (padding, prompts under completion-only loss).
 *
 * <p>By default the mean is over the batch's own tokens. Training sets {@link #setStepTokens} to
 * the target tokens of the whole optimizer step over all ranks and micro-batches ({@code
 * FsdpTrainer.countStepItems}): each batch then gives its share of the step's global token mean,
 * Hugging Face Trainer's normalization ({@code num_items_in_batch}).
 *
 * <p>The log-softmax over the vocabulary and its gradient are computed together, a few rows at a
 * time, without a graph: the loss's backward is then one product with the precomputed gradient,
 * instead of a log-softmax output, a zero-filled gradient of the picked entries and a log-softmax
 * backward, each as large as the logits. Outside grad mode (evaluation) only the loss is computed.
 */
public final class CausalLmLoss extends Loss {

    /**
     * The elements of one chunk of logits (3 MiB of float32): below the ranks' allocator's mmap
     * threshold (4 MiB, see docs/benchmarks.md), so a chunk's temporaries reuse heap memory.
     */
    private static final long CHUNK_ELEMENTS = 3L << 18;

    private long stepTokens;

    /** Creates the loss. */
    public CausalLmLoss() {
        super("causal_lm_loss");
    }

    /**
     * Sets the divisor of the summed token losses: the target tokens of the whole optimizer step
     * over all ranks and micro-batches; 0 returns to each batch's own mean.
     *
     * @param tokens the step's target tokens, or 0
     */
    public void setStepTokens(long tokens) {
        if (tokens < 0) {
            throw new IllegalArgumentException("A token count cannot be negative: " + tokens);
        }
        this.stepTokens = tokens;
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        NDArray logits = predictions.head();
        long vocab = logits.getShape().get(logits.getShape().dimension() - 1);
        NDManager manager = logits.getManager();
        // Softmax over the vocabulary and the loss in float32, whatever the logits' type.
        NDArray rows = Precision.FLOAT32.cast(logits).reshape(-1, vocab);
        NDArray flat = labels.head().reshape(-1);
        NDArray trained = flat.neq(Sequences.IGNORE);
        NDArray mask = trained.toType(DataType.FLOAT32, false);
        // A step (or batch) without target tokens has loss 0, not 0 / 0.
        NDArray divisor =
                stepTokens > 0 ? manager.create((float) stepTokens) : mask.sum().maximum(1f);
        boolean withGradient = Autograd.isGradMode();
        NDArray gradient = withGradient ? Precision.FLOAT32.empty(manager, rows.getShape()) : null;
        NDArray sum =
                Autograd.withGradMode(
                        false,
                        () ->
                                chunkedLoss(
                                        rows.stopGradient(),
                                        flat,
                                        trained,
                                        mask,
                                        divisor,
                                        gradient));
        NDArray loss = sum.div(divisor);
        if (!withGradient) {
            return loss;
        }
        // d(loss)/d(rows) is the gradient computed above: its dot product with the rows, less
        // the same without a graph (exactly 0), carries it into backward.
        NDArray carrier = rows.reshape(-1).dot(gradient.reshape(-1));
        return carrier.sub(carrier.stopGradient()).add(loss);
    }

    /**
     * The summed token losses, a few rows of logits at a time, and (when {@code gradient} is given)
     * their gradient {@code mask (softmax - onehot) / divisor} written into it: no array of the
     * vocabulary's width larger than one chunk is made besides {@code gradient}.
     */
    private static NDArray chunkedLoss(
            NDArray rows,
            NDArray labels,
            NDArray trained,
            NDArray mask,
            NDArray divisor,
            NDArray gradient) {
        long count = rows.getShape().get(0);
        long vocab = rows.getShape().get(1);
        long chunk = Math.max(1, CHUNK_ELEMENTS / vocab);
        NDManager manager = rows.getManager();
        NDArray sum = manager.zeros(new Shape(), DataType.FLOAT32);
        for (long start = 0; start < count; start += chunk) {
            long end = Math.min(count, start + chunk);
            try (NDManager scratch = manager.newSubManager()) {
                NDIndex range = new NDIndex("{}:{}", start, end);
                NDArray logProbabilities = slice(rows, range, scratch).logSoftmax(1);
                NDArray target = slice(labels, range, scratch).mul(slice(trained, range, scratch));
                NDArray weight = slice(mask, range, scratch).reshape(-1, 1);
                NDArray picked = logProbabilities.gather(target.reshape(-1, 1), 1);
                sum.subi(picked.mul(weight).sum());
                if (gradient != null) {
                    NDArray oneHot = target.oneHot((int) vocab);
                    NDArray chunkGradient =
                            logProbabilities.exp().sub(oneHot).muli(weight.div(divisor));
                    TensorMemory.copy(chunkGradient, slice(gradient, range, scratch));
                }
            }
        }
        return sum;
    }

    private static NDArray slice(NDArray array, NDIndex range, NDManager scratch) {
        NDArray slice = array.get(range);
        slice.attach(scratch);
        return slice;
    }
}
