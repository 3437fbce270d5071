package ai.djl.fsdp.zoo.sharded;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.ChunkedCrossEntropy;
import ai.djl.fsdp.tensor.op.CrossEntropy;
import ai.djl.fsdp.tensor.op.FusedLinear;
import ai.djl.fsdp.tensor.op.ScalarOps;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.loss.Loss;

/**
 * The causal language-modelling loss: the mean cross-entropy of the next token over the positions
 * whose label is a token. Labels are the token ids {@code [B, T]} that follow each input position,
 * or {@link #IGNORE} (-100, as in Hugging Face) where nothing is predicted (padding, prompts under
 * completion-only loss). Predictions are either
 *
 * <ul>
 *   <li>{@code NDList(logits [B, T, vocab])}, or
 *   <li>{@code NDList(hiddenStates [B, T, C], headWeight [vocab, C])}, what a {@link
 *       ai.djl.fsdp.zoo.CausalLM} returns in training with {@link
 *       ai.djl.fsdp.zoo.CausalLM#setFusedLossHead} on: the loss then computes the logits {@code h
 *       W^T} itself, a few rows at a time, and never holds all of them or their gradient (a fused
 *       linear cross-entropy) unless they fit in one chunk.
 * </ul>
 *
 * <p>By default the mean is over the batch's own tokens. Training sets {@link #setStepTokens} to
 * the target tokens of the whole optimizer step over all ranks and micro-batches ({@code
 * FsdpTrainer.countStepItems}): each batch then gives its share of the step's global token mean,
 * Hugging Face Trainer's normalization ({@code num_items_in_batch}).
 *
 * <p>Logits that fit in one chunk ({@link ChunkedCrossEntropy#fitsOneChunk}, the host-bound shapes
 * of small models) take libtorch's own cross-entropy in float32 with autograd. Larger ones never
 * exist whole: the loss hands its targets (each position's token and weight, and the divisor) to
 * {@link ChunkedCrossEntropy}, which computes the loss and its gradient a chunk of rows at a time.
 * This class owns what makes the cross-entropy a causal-LM loss: the ignored label, the masks and
 * the divisor. An encoder-decoder model's logits over its target tokens take the same loss, its
 * labels the targets themselves.
 */
public final class CausalLmLoss extends Loss {

    /** The label of a position that is not trained on (Hugging Face's {@code -100}). */
    public static final long IGNORE = -100;

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
        NDArray flat = labels.head().reshape(-1);
        switch (predictions.size()) {
            case 1:
                return fromLogits(flat, predictions.head());
            case 2:
                return fromHiddenStates(flat, predictions.get(0), predictions.get(1));
            default:
                throw new IllegalArgumentException(
                        "The causal LM loss takes NDList(logits [B, T, vocab]) or NDList(hidden"
                                + " states [B, T, C], head weight [vocab, C]) (a CausalLM with"
                                + " setFusedLossHead(true)), got "
                                + predictions.size()
                                + " arrays");
        }
    }

    /**
     * The flattened labels as the chunked cross-entropy's targets: the token ids to pick (0 where
     * ignored), each position's weight (1 or 0) and the divisor of the summed losses.
     */
    private ChunkedCrossEntropy.Targets targets(NDArray flat) {
        NDArray trained = ScalarOps.neq(flat, IGNORE);
        NDArray weights = trained.toType(DataType.FLOAT32, false);
        return new ChunkedCrossEntropy.Targets(
                flat.mul(trained), weights.reshape(-1, 1), divisor(flat, weights));
    }

    /**
     * The divisor of the summed token losses: the trained tokens, 1 each in {@code weights}, or
     * counted in {@code flat} when {@code weights} is null.
     */
    private NDArray divisor(NDArray flat, NDArray weights) {
        if (stepTokens > 0) {
            return flat.getManager().full(new Shape(), (float) stepTokens);
        }
        NDArray trained = weights != null ? weights : ScalarOps.neq(flat, IGNORE);
        // A step (or batch) without target tokens has loss 0, not 0 / 0.
        return ScalarOps.maximum(trained.toType(DataType.FLOAT32, false).sum(), 1f);
    }

    /**
     * The mean loss of logits {@code [N, vocab]} that fit in one chunk, by libtorch's cross-entropy
     * in float32 with autograd: backward rounds the logits' float32 gradient once to their type, as
     * the chunked computation does; from hidden states the head's two gradient products then run in
     * the compute type, as PyTorch's autocast runs them (the chunked computation runs float16's in
     * float32, before the loss scale reaches them).
     */
    private NDArray wholeLoss(NDArray flat, NDArray rows) {
        return CrossEntropy.sum(Precision.FLOAT32.cast(rows), flat, IGNORE)
                .div(divisor(flat, null));
    }

    private NDArray fromLogits(NDArray flat, NDArray logits) {
        long vocab = logits.getShape().get(logits.getShape().dimension() - 1);
        NDArray rows = logits.reshape(-1, vocab);
        if (ChunkedCrossEntropy.fitsOneChunk(rows.getShape().get(0), vocab)) {
            return wholeLoss(flat, rows);
        }
        return ChunkedCrossEntropy.fromLogits(rows, targets(flat));
    }

    private NDArray fromHiddenStates(NDArray flat, NDArray hidden, NDArray weight) {
        Shape weightShape = weight.getShape();
        long width = hidden.getShape().get(hidden.getShape().dimension() - 1);
        if (weightShape.dimension() != 2 || weightShape.get(1) != width) {
            throw new IllegalArgumentException(
                    "The head weight must be [vocab, C] with C = the hidden states' last axis ("
                            + width
                            + "), got "
                            + weightShape);
        }
        NDArray rows = hidden.reshape(-1, width);
        if (ChunkedCrossEntropy.fitsOneChunk(rows.getShape().get(0), weightShape.get(0))) {
            // The head's product in the compute type, as the head computes it.
            return wholeLoss(flat, FusedLinear.apply(rows, weight, null));
        }
        return ChunkedCrossEntropy.fromHiddenStates(rows, weight, targets(flat));
    }
}
