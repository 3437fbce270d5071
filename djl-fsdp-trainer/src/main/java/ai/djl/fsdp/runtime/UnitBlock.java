package ai.djl.fsdp.runtime;

import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * Stands in a parent block for a unit's block: its forward runs the unit through the {@link
 * UnitExecutor} (gather, compute, record, reshard); everything else is the wrapped block's, so
 * parameter names, children and serialization are unchanged.
 */
final class UnitBlock extends DelegatingBlock {

    private final FsdpUnit unit;
    private final UnitExecutor executor;

    UnitBlock(FsdpUnit unit, UnitExecutor executor) {
        super(unit.getBlock());
        this.unit = unit;
        this.executor = executor;
    }

    @Override
    public NDList forward(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        return executor.call(unit, parameterStore, inputs, training, params);
    }

    @Override
    public String toString() {
        return "FSDP unit " + unit.getName() + ": " + inner();
    }
}
