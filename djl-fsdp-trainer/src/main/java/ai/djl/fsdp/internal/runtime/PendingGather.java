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
}
