package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.ndarray.NDManager;

/**
 * Tokenized examples as the training loop and evaluation read them: a batch of any of them is the
 * model's inputs and the labels its loss is taken against, the same for a decoder-only model
 * ({@link Sequences#padded}) and an encoder-decoder one ({@link Seq2SeqExamples}).
 */
public interface TrainingData {

    /**
     * Returns the number of examples.
     *
     * @return the number of examples
     */
    int size();

    /**
     * Returns the number of trained labels of the examples at {@code indices}, counted on the host.
     *
     * @param indices the examples' indices
     * @return the labels of their batch that are not ignored
     */
    long countLabels(int[] indices);

    /**
     * Stacks examples into a batch padded to its longest.
     *
     * @param manager the manager of the arrays
     * @param indices which examples
     * @return the batch
     */
    LabeledBatch batch(NDManager manager, int[] indices);
}
