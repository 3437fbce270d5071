package ai.djl.fsdp.trainer;

/**
 * What one rank holds and sends, in bytes.
 *
 * @param parameterBytes this rank's parameter shards (padding included)
 * @param gradientBytes this rank's accumulated gradient shards
 * @param optimizerStateBytes the optimizer's state for this rank's shards
 * @param unshardedParameterBytes all of the model's parameters, unpadded: what one replica holds
 * @param sentBytesLastStep the bytes this rank sent during the last optimizer step (all its
 *     micro-batches and the step itself)
 */
public record ShardingStats(
        long parameterBytes,
        long gradientBytes,
        long optimizerStateBytes,
        long unshardedParameterBytes,
        long sentBytesLastStep) {

    /** Returns the bytes of model state this rank holds: parameters, gradients, optimizer state. */
    public long modelStateBytes() {
        return parameterBytes + gradientBytes + optimizerStateBytes;
    }
}
