package ai.djl.fsdp.config;

import ai.djl.Device;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import java.util.Optional;

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
     * @throws UnsupportedOperationException for that on a GPU whose CUDA virtual memory cannot be
     *     used here (the libraries missing), naming what is missing
     */
    public void checkDevice(Device device) {
        if (!releasesKeptParameters()) {
            return;
        }
        String fallback =
                ". Turn activation checkpointing on (FULL_SHARD does), or keep the parameters"
                        + " until backward (reshard_after_forward=false, SHARD_GRAD_OP).";
        if (device.isGpu()) {
            Optional<String> problem = CudaLibraries.Part.DRIVER.problem();
            if (problem.isPresent()) {
                throw new UnsupportedOperationException(
                        problem.get()
                                + ". reshard_after_forward without activation checkpointing"
                                + " releases gathered parameters on "
                                + device
                                + " through it"
                                + fallback);
            }
        } else if (!Device.Type.CPU.equals(device.getDeviceType())) {
            throw new IllegalArgumentException(
                    "reshard_after_forward without activation checkpointing releases a unit's"
                            + " gathered parameters after forward through host memory mappings or"
                            + " CUDA virtual memory, which do not apply to "
                            + device
                            + fallback);
        }
    }
}
