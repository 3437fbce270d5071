package ai.djl.fsdp.checkpoint;

import java.io.IOException;

/** What runs on each FSDP unit while that unit, and only that unit, has its full parameters. */
@FunctionalInterface
public interface UnitVisitor {

    /**
     * Visits one unit. Its parameters hold their full arrays (copies: changing them leaves the
     * shards alone); every other unit's parameters hold empty arrays.
     *
     * @param unit the unit
     * @throws IOException if the visitor writes and writing fails
     */
    void visit(GatheredUnit unit) throws IOException;
}
