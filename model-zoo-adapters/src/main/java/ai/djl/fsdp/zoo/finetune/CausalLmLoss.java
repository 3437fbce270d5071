package ai.djl.fsdp.zoo.finetune;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.training.loss.Loss;

/**
 * The causal language-modelling loss: the mean cross-entropy of the next token over every position
 * of every sequence. Predictions are {@code logits [B, T, vocab]}; labels are the token ids {@code
 * [B, T]} that follow each input position (the inputs shifted left by one).
 */
public final class CausalLmLoss extends Loss {

    private final Loss crossEntropy = Loss.softmaxCrossEntropyLoss();

    /** Creates the loss. */
    public CausalLmLoss() {
        super("causal_lm_loss");
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        NDArray logits = predictions.head();
        long vocab = logits.getShape().get(logits.getShape().dimension() - 1);
        // DJL's cross-entropy takes [N, classes] and [N]: every position is one classification.
        return crossEntropy.evaluate(
                new NDList(labels.head().reshape(-1)), new NDList(logits.reshape(-1, vocab)));
    }
}
