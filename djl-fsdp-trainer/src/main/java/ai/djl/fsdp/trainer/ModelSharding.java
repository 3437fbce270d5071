package ai.djl.fsdp.trainer;

import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.runtime.Collectives;
import ai.djl.fsdp.runtime.FsdpUnit;
import ai.djl.fsdp.runtime.ShardedModel;
import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.fsdp.wrap.UnitPlan.PlannedUnit;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns an initialized model into a {@link ShardedModel}: plans the units, loads each unit's flat
 * shards (trainable and frozen apart), and hands them to the runtime.
 */
final class ModelSharding {

    private ModelSharding() {}

    static ShardedModel shard(
            Block block,
            FsdpConfig config,
            TrainerOptions options,
            ProcessGroup group,
            NDManager manager) {
        if (!block.isInitialized()) {
            throw new IllegalStateException(
                    "The model's parameters are not initialized: call"
                            + " trainer.initialize(inputShapes) (or load the model) before training"
                            + " with FSDP.");
        }
        UnitPlan plan = UnitPlan.of(block, config.getWrapPolicy());
        int shardCount = config.isSharded() ? group.getSize() : 1;
        ShardLoader loader =
                new ShardLoader(
                        shardCount,
                        shardCount == 1 ? 0 : group.getRank(),
                        manager,
                        config.isSyncModuleStates() && group.getSize() > 1 ? group : null,
                        options.getInitialValues(),
                        config.getFrozenStoragePrecision());
        List<FsdpUnit> units = new ArrayList<>();
        try {
            for (PlannedUnit planned : plan.getUnits()) {
                List<FlatParameter> flats = new ArrayList<>(2);
                for (boolean trainable : new boolean[] {true, false}) {
                    List<Parameter> members = planned.parameters(trainable);
                    if (!members.isEmpty()) {
                        String id = planned.name() + (trainable ? "/trainable" : "/frozen");
                        flats.add(loader.load(id, trainable, members));
                    }
                }
                units.add(
                        new FsdpUnit(
                                planned.index(),
                                planned.name(),
                                planned.block(),
                                planned.parent(),
                                flats));
            }
            return new ShardedModel(
                    new Collectives(group, config.getMixedPrecision()),
                    units,
                    config.getExecutionOptions());
        } catch (RuntimeException e) {
            units.forEach(FsdpUnit::close);
            throw e;
        }
    }
}
