package ai.djl.fsdp.trainer;

import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.trainer.metrics.SentBytes;
import java.util.List;

/**
 * What one rank holds and sends, in bytes.
 *
 * @param parameterBytes this rank's parameter shards as stored (padding included)
 * @param gradientBytes this rank's accumulated gradient shards
 * @param optimizerStateBytes the optimizer's state for this rank's shards
 * @param unshardedParameterBytes all of the model's parameters, unpadded: what one replica holds
 * @param sentBytesLastStep the bytes this rank sent during the last optimizer step (all its
 *     micro-batches and the step itself)
 * @param sentAcrossBytesLastStep the part of {@code sentBytesLastStep} sent between shard groups
 *     (the replicate groups' all-reduces of hybrid sharding, which cross between nodes when the
 *     shard groups are the nodes); 0 without hybrid sharding
 * @param waitNanosLastStep the time this rank's host thread was blocked waiting for collectives
 *     during the last optimizer step: on the socket backend, the communication that compute did not
 *     hide; on NCCL a wait only orders the compute stream after the collective, so the host does
 *     not block and this stays near zero
 * @param sentByKindLastStep {@code sentBytesLastStep} by the kind of collective that sent them
 */
public record ShardingStats(
        long parameterBytes,
        long gradientBytes,
        long optimizerStateBytes,
        long unshardedParameterBytes,
        long sentBytesLastStep,
        long sentAcrossBytesLastStep,
        long waitNanosLastStep,
        SentBytes sentByKindLastStep) {

    /**
     * Accounts for a rank's flat parameters.
     *
     * @param flats the rank's flat parameters
     * @param optimizerStateBytes the optimizer's state for them
     * @param sentLastStep the bytes sent during the last optimizer step, by kind
     * @param sentAcrossBytesLastStep the part of them sent between shard groups
     * @param waitNanosLastStep the time spent waiting for collectives during the last step
     * @return the figures
     */
    static ShardingStats of(
            List<FlatParameter> flats,
            long optimizerStateBytes,
            SentBytes sentLastStep,
            long sentAcrossBytesLastStep,
            long waitNanosLastStep) {
        long parameters = 0;
        long gradients = 0;
        long unsharded = 0;
        for (FlatParameter flat : flats) {
            parameters += flat.getShardBytes();
            gradients += flat.getGradientBytes();
            unsharded += flat.getLayout().getNumel() * flat.getDataType().getNumOfBytes();
        }
        return new ShardingStats(
                parameters,
                gradients,
                optimizerStateBytes,
                unsharded,
                sentLastStep.total(),
                sentAcrossBytesLastStep,
                waitNanosLastStep,
                sentLastStep);
    }

    /** Returns the bytes of model state this rank holds: parameters, gradients, optimizer state. */
    public long modelStateBytes() {
        return parameterBytes + gradientBytes + optimizerStateBytes;
    }
}
