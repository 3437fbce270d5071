package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.util.Failures;
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

    /**
     * Waits for the collectives, accumulates the results and frees what they read. When a part
     * fails, the later parts' collectives are waited for too (their failures suppressed onto the
     * first) before what they read and write is freed.
     */
    void complete() {
        try {
            for (int i = 0; i < parts.size(); i++) {
                Part part = parts.get(i);
                try {
                    await(part);
                    // A gradient reduced in a narrower type joins the float32 shard gradient.
                    part.flat().accumulateGradient(Precision.FLOAT32.cast(part.reduced()), scale);
                } catch (RuntimeException | Error e) {
                    awaitAfter(e, parts.subList(i + 1, parts.size()));
                    throw e;
                }
            }
        } finally {
            if (scope != null) {
                scope.close();
                scope = null;
            }
        }
    }

    /**
     * Waits for the collectives of {@code parts} after {@code failure}, adding their own failures
     * to it as suppressed: the arrays they read and write may be freed afterwards.
     *
     * @param failure the failure the caller throws next
     * @param parts the reductions in flight
     */
    static void awaitAfter(Throwable failure, List<Part> parts) {
        Failures.forEachAfter(failure, parts, PendingReduction::await);
    }

    private static void await(Part part) {
        if (part.work() != null) {
            part.work().await();
        }
    }
}
