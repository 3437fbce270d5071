package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import java.util.List;

/**
 * A unit's gradient reduction in flight: for each trainable flat parameter, the collective (null
 * when there is one rank) and the array it leaves this rank's part in. Completing it adds those
 * parts, scaled, to the shards' gradients and frees what the reduction read.
 */
final class PendingReduction {

    /**
     * One flat parameter's reduction.
     *
     * @param flat the flat parameter whose gradient receives the result
     * @param work the collective, or null when nothing moves
     * @param reduced where this rank's part of the reduced gradient lands
     */
    record Part(FlatParameter flat, Work work, NDArray reduced) {}

    private final List<Part> parts;
    private final float scale;
    private NDManager scope;

    PendingReduction(List<Part> parts, float scale) {
        this.parts = List.copyOf(parts);
        this.scale = scale;
    }

    /**
     * Closes {@code scope} (the flat gradients the reduction reads) once it has completed.
     *
     * @param scope what the reduction reads from
     */
    void releaseWhenDone(NDManager scope) {
        this.scope = scope;
    }

    /** Waits for the collectives, accumulates the results and frees what they read. */
    void complete() {
        try {
            for (Part part : parts) {
                if (part.work() != null) {
                    part.work().await();
                }
                // A gradient reduced in a narrower type joins the float32 shard gradient.
                part.flat().accumulateGradient(Precision.FLOAT32.cast(part.reduced()), scale);
            }
        } finally {
            if (scope != null) {
                scope.close();
                scope = null;
            }
        }
    }
}
