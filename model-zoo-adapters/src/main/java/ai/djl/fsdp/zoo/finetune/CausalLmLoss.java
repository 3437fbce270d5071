package ai.djl.fsdp.zoo.finetune;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.zoo.finetune.data.Sequences;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.loss.Loss;

/**
 * The causal language-modelling loss: the mean cross-entropy of the next token over the positions
 * whose label is a token. Predictions are {@code logits [B, T, vocab]}; labels are the token ids
 * {@code [B, T]} that follow each input position, or {@link Sequences#IGNORE} (-100, as in Hugging
 * Face) where nothing is predicted (padding, prompts under completion-only loss).
 */
public final class CausalLmLoss extends Loss {

    /** Creates the loss. */
    public CausalLmLoss() {
        super("causal_lm_loss");
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
        return picked.mul(mask).sum().neg().div(mask.sum().maximum(1f));
    }

    /**
     * Returns the number of positions a batch's loss averages over.
     *
     * @param labels the labels {@code [B, T]}
     * @return the count of labels that are tokens
     */
    public static long countLabels(NDArray labels) {
        return labels.neq(Sequences.IGNORE).sum().toType(DataType.INT64, false).getLong();
    }
}
