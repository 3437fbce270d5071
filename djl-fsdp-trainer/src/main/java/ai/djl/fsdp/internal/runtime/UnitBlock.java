package ai.djl.fsdp.internal.runtime;

import ai.djl.ndarray.NDList;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;

/**
 * Stands in a parent block for a unit's block: its forward runs the unit through the {@link
 * UnitLifecycle} within the {@link ShardedPasses} (gather, compute, record, reshard); everything
 * else is the wrapped block's, so parameter names, children and serialization are unchanged.
 */
final class UnitBlock extends DelegatingBlock {

    private final UnitLifecycle unit;
    private final ShardedPasses passes;

    UnitBlock(UnitLifecycle unit, ShardedPasses passes) {
        super(unit.unit().getBlock());
        this.unit = unit;
        this.passes = passes;
    }

    @Override
    public NDList forward(
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        return passes.call(unit, parameterStore, inputs, training, params);
    }

    @Override
    public String toString() {
        return "FSDP unit " + unit.unit().getName() + ": " + inner();
    }
}
