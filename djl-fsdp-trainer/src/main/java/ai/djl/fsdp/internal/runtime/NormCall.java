package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;

/**
 * One training call of a {@link SyncBatchNorm}, kept for backward. DJL offers no custom autograd
 * function, so the call cuts the graph where the normalized input starts: the blocks after it see
 * {@code normalizedLeaf}, a fresh leaf, and backward stops there; {@link #backward} then sums the
 * gradient's two per-channel terms over the ranks and pushes the input's gradient into {@code
 * input}, still attached to the graph before the layer. Inside a unit the calls are walked after
 * the unit's own backward, the last first; in the root they are entries of the tape.
 *
 * @param input the layer's input, attached to the graph that made it
 * @param normalizedLeaf the leaf the blocks after the layer computed with
 * @param normalized the normalized input, float32
 * @param inverseStd {@code 1 / sqrt(variance + epsilon)} per channel, float32
 * @param count the elements per channel over every rank
 * @param axis the channel axis, counted from 0
 */
record NormCall(
        NDArray input,
        NDArray normalizedLeaf,
        NDArray normalized,
        NDArray inverseStd,
        long count,
        int axis)
        implements TapeEntry {

    /**
     * Pushes the input's gradient into the graph before the layer: a collective (an all-reduce of 2
     * floats per channel) that every rank runs, whether or not its slice got a gradient.
     *
     * @param collectives the ranks' collectives
     */
    void backward(Collectives collectives) {
        try (NDManager scope = normalized.getManager().newSubManager()) {
            NDArray found = Autograd.gradientOf(normalizedLeaf);
            NDArray gradient;
            if (found == null) {
                gradient = normalized.zerosLike();
            } else {
                found.attach(scope);
                gradient = Precision.FLOAT32.cast(found);
            }
            gradient.attach(scope);
            NDArray sums = BatchStatistics.gradientSums(gradient, normalized, axis);
            sums.attach(scope);
            collectives.sumOverRanks(sums);
            NDArray inputGradient =
                    BatchStatistics.inputGradient(
                            gradient, normalized, inverseStd, sums, count, axis);
            inputGradient.attach(scope);
            NDArray typed = Precision.castLike(inputGradient, input);
            typed.attach(scope);
            Autograd.pushInto(input, typed);
        }
    }
}
