package ai.djl.fsdp.runtime;

import ai.djl.Device;

/**
 * How the runtime schedules a step, as FSDP2's {@code fully_shard} arguments.
 *
 * @param reshardAfterForward whether a unit's gathered parameters are freed after its forward (and
 *     gathered again for its backward), or kept until its backward is done
 * @param activationCheckpointing whether a unit runs forward without a graph and is recomputed in
 *     backward, or keeps its graph (and its activations) from forward
 * @param prefetch whether the next unit's all-gather starts before the current unit computes
 */
public record ExecutionOptions(
        boolean reshardAfterForward, boolean activationCheckpointing, boolean prefetch) {

    /**
     * Returns whether units keep their graphs over parameters given back after forward (FULL_SHARD
     * without recompute): their gathered buffers then live in releasable memory (host pages, or GPU
     * physical memory under a fixed address reservation), given back after forward and backed and
     * refilled at the same addresses before backward.
     */
    public boolean releasesKeptParameters() {
        return reshardAfterForward && !activationCheckpointing;
    }

    /**
     * Checks the options can run on {@code device}.
     *
     * @param device where the flat parameters live
     * @throws IllegalArgumentException for resharding after forward without activation
     *     checkpointing on a device that is neither the CPU nor a CUDA GPU
     */
    public void checkDevice(Device device) {
        boolean supported = device.isGpu() || Device.Type.CPU.equals(device.getDeviceType());
        if (releasesKeptParameters() && !supported) {
            throw new IllegalArgumentException(
                    "reshard_after_forward without activation checkpointing releases a unit's"
                            + " gathered parameters after forward through host memory mappings or"
                            + " CUDA virtual memory, which do not apply to "
                            + device
                            + ". Turn activation checkpointing on (FULL_SHARD does), or keep the"
                            + " parameters until backward (reshard_after_forward=false,"
                            + " SHARD_GRAD_OP).");
        }
    }
}
