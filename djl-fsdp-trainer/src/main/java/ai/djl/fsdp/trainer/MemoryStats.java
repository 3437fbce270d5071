package ai.djl.fsdp.trainer;

/**
 * Where one rank's model memory is, in bytes: the parameter shards, their gradients and the
 * optimizer state (on the rank's device, or in host memory with CPU offload), the gathered buffers
 * of its passes, and what initialization held.
 *
 * <p>On a CPU rank the device is the host: the figures then say what offload would move off a GPU,
 * and {@link #deviceBytes()} is what the compute side holds apart from the offloaded state.
 *
 * @param cpuOffload whether shards, gradients and optimizer state live in host memory
 * @param shardBytes this rank's parameter shards, trainable and frozen (padding included)
 * @param gradientBytes this rank's gradient shards: trainable parameters only
 * @param optimizerStateBytes the optimizer's state for this rank's trainable shards
 * @param peakGatheredBytes the largest bytes of gathered (full) parameter buffers held at once
 *     during the passes so far, prefetched ones included
 * @param initPeakParameterBytes the largest bytes of full parameter arrays held at once while the
 *     model was initialized and sharded: the whole model when it came initialized, about the root's
 *     and one unit's when the trainer initialized it
 */
public record MemoryStats(
        boolean cpuOffload,
        long shardBytes,
        long gradientBytes,
        long optimizerStateBytes,
        long peakGatheredBytes,
        long initPeakParameterBytes) {

    /** Returns the bytes of shards, gradients and optimizer state. */
    public long modelStateBytes() {
        return shardBytes + gradientBytes + optimizerStateBytes;
    }

    /**
     * Returns the peak bytes on the rank's device: the gathered buffers, plus the model state
     * unless offloaded.
     */
    public long deviceBytes() {
        return (cpuOffload ? 0 : modelStateBytes()) + peakGatheredBytes;
    }

    /** Returns the bytes held in host memory because of offload (0 without it). */
    public long hostBytes() {
        return cpuOffload ? modelStateBytes() : 0;
    }
}
