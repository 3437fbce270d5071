package ai.djl.fsdp.unit;

import java.io.IOException;

/**
 * What {@link ShardedModel#forEachUnitGathered} runs on each FSDP unit while that unit, and only
 * that unit, has its full parameters in place.
 */
@FunctionalInterface
public interface UnitVisitor {

    /**
     * Visits one unit. Every parameter of {@code unit} holds its full array (a copy: changing it
     * leaves the shards alone); every other unit's parameters hold empty arrays.
     *
     * @param unit the unit
     * @throws IOException if the visitor writes and writing fails
     */
    void visit(FsdpUnit unit) throws IOException;
}
