package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.dist.Work;
import java.util.List;

/**
 * The all-gathers in flight for one unit, one per sharded flat parameter.
 *
 * @param works the collectives' handles
 */
record PendingGather(List<Work> works) {

    /** Waits until every gather has completed. */
    void await() {
        works.forEach(Work::await);
    }

    /**
     * Waits for every gather after {@code failure} stopped the unit's gather from being started,
     * adding their own errors to it as suppressed: their buffers may be freed afterwards.
     *
     * @param failure the error that stopped the start
     */
    void awaitAfter(Throwable failure) {
        for (Work work : works) {
            try {
                work.await();
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
    }
}
