package ai.djl.fsdp.internal.config;

import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;

/**
 * Which of a step's collectives send quantized values, resolved from the trainer's {@code
 * CommunicationQuantization}.
 *
 * @param weights how trainable weights are quantized for their all-gather, each rank restoring them
 *     in the compute type; null to gather them exactly
 * @param gradients how gradients are quantized once for an all-to-all and summed in float32 by the
 *     rank that owns each piece, instead of a reduce-scatter; null to reduce them exactly
 * @param errorFeedback whether each rank adds what quantizing took off its last gradient to the
 *     next one before quantizing it (a float32 residual the size of each full flat gradient)
 * @param replicas how hybrid sharding's gradient shards are quantized for their average across the
 *     replicate groups (the traffic between nodes), full precision inside the shard groups; null to
 *     average them exactly
 */
public record CollectiveQuantizers(
        SymmetricQuantizer weights,
        SymmetricQuantizer gradients,
        boolean errorFeedback,
        SymmetricQuantizer replicas) {

    /** Every collective exact. */
    public static final CollectiveQuantizers NONE =
            new CollectiveQuantizers(null, null, false, null);
}
