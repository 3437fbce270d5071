package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
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
 */
public final class CausalLmLoss extends Loss {

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
        NDArray flat = labels.head().reshape(-1, 1);
        NDArray trained = flat.neq(Sequences.IGNORE);
        // Softmax over the vocabulary and the loss in float32, whatever the logits' type.
        NDArray logProbabilities = Precision.FLOAT32.cast(logits).reshape(-1, vocab).logSoftmax(1);
        NDArray picked = logProbabilities.gather(flat.mul(trained), 1);
        NDArray mask = trained.toType(picked.getDataType(), false);
        NDArray sum = picked.mul(mask).sum().neg();
        // A step (or batch) without target tokens has loss 0, not 0 / 0.
        return stepTokens > 0 ? sum.div(stepTokens) : sum.div(mask.sum().maximum(1f));
    }
}
