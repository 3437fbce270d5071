package ai.djl.fsdp.runtime;

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
     * Checks the options can run.
     *
     * @throws IllegalArgumentException for resharding after forward without activation
     *     checkpointing: the graph would refer to freed parameters
     */
    public ExecutionOptions {
        if (reshardAfterForward && !activationCheckpointing) {
            throw new IllegalArgumentException(
                    "reshard_after_forward without activation checkpointing is not supported yet:"
                            + " a unit's graph would refer to parameters freed after its forward."
                            + " Turn activation checkpointing on (FULL_SHARD does), or keep the"
                            + " parameters until backward (reshard_after_forward=false,"
                            + " SHARD_GRAD_OP).");
        }
    }
}
