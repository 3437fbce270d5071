package ai.djl.fsdp.internal.config;

import ai.djl.Device;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.memory.CudaLibraries;
import java.util.Objects;
import java.util.Optional;

/**
 * How the runtime runs a step, as FSDP2's {@code fully_shard} arguments, resolved from the
 * trainer's {@code FsdpConfig} (its {@code MixedPrecision} gives the two types).
 *
 * <p>Which units are recomputed in backward is the trainer's {@code ActivationCheckpointing} to
 * say, unit by unit ({@code FsdpUnit.isRecomputed}); a unit that keeps its graph while its
 * parameters are freed after forward gathers into releasable memory (host pages, or GPU physical
 * memory under a fixed address reservation), given back after forward and backed and refilled at
 * the same addresses before backward.
 *
 * @param reshardAfterForward whether a unit's gathered parameters are freed after its forward (and
 *     gathered again for its backward), or kept until its backward is done
 * @param prefetch whether the next unit's all-gather starts before the current unit computes
 * @param computeType the type units gather their parameters in and compute in
 * @param reduceType the type gradients are reduced in
 * @param quantizers which collectives send quantized values
 */
public record ExecutionOptions(
        boolean reshardAfterForward,
        boolean prefetch,
        Precision computeType,
        Precision reduceType,
        CollectiveQuantizers quantizers) {

    /**
     * Checks the types.
     *
     * @throws NullPointerException for a missing type
     */
    public ExecutionOptions {
        Objects.requireNonNull(computeType, "computeType");
        Objects.requireNonNull(reduceType, "reduceType");
        Objects.requireNonNull(quantizers, "quantizers");
    }

    /**
     * Checks the options can run on {@code device}.
     *
     * @param device where the flat parameters live
     * @param unitsKeepGraphs whether some unit is not recomputed and so keeps its graph
     * @throws IllegalArgumentException for resharding after forward with a unit keeping its graph
     *     on a device that is neither the CPU nor a CUDA GPU
     * @throws UnsupportedOperationException for that on a GPU whose CUDA virtual memory cannot be
     *     used here (the libraries missing), naming what is missing
     */
    public void checkDevice(Device device, boolean unitsKeepGraphs) {
        if (!reshardAfterForward || !unitsKeepGraphs) {
            return;
        }
        String fallback =
                ". Recompute every unit (optActivationCheckpointing(true)), or keep the parameters"
                        + " until backward (reshard_after_forward=false, SHARD_GRAD_OP).";
        if (device.isGpu()) {
            Optional<String> problem = CudaLibraries.Part.DRIVER.problem();
            if (problem.isPresent()) {
                throw new UnsupportedOperationException(
                        problem.get()
                                + ". reshard_after_forward releases the gathered parameters of"
                                + " units that are not recomputed on "
                                + device
                                + " through it"
                                + fallback);
            }
        } else if (!Device.Type.CPU.equals(device.getDeviceType())) {
            throw new IllegalArgumentException(
                    "reshard_after_forward releases the gathered parameters of units that are"
                            + " not recomputed after their forward through host memory mappings or"
                            + " CUDA virtual memory, which do not apply to "
                            + device
                            + fallback);
        }
    }
}
