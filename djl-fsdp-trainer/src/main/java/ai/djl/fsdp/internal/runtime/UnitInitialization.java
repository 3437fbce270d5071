package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.checkpoint.Placeholder;
import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.fsdp.reflect.ParameterArrays;
import ai.djl.fsdp.wrap.UnitPlan.PlannedUnit;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Initializes a model's fresh parameters one FSDP unit at a time, as FSDP2's meta-device
 * initialization and SageMaker's delayed parameter initialization do, so that a rank never holds
 * the whole model: DJL's own {@code initialize} walks the block tree, and as soon as a unit's block
 * has initialized its parameters, the caller keeps this rank's shard of them and their full arrays
 * are released (each parameter left an empty placeholder of its type) before the walk goes on.
 *
 * <p>The walk, its initializers and the random numbers they draw are DJL's, in DJL's order: the
 * values are those of initializing the whole model at once, bit for bit. The parameters outside the
 * units (the root's) stay whole until the walk ends, as they stay gathered for every step of
 * training; the largest parameter memory held at once is the root's and one unit's.
 *
 * <p>A rank whose values are replaced by another rank's as the shards load (under {@code
 * sync_module_states}, every rank but 0) draws nothing: the parameters it is told to give {@link
 * Placeholder placeholders} get memory of their shape but no values, and nothing is computed from
 * them, so the start's draws (and a 4-bit base's quantization) happen once, on rank 0.
 */
public final class UnitInitialization {

    private UnitInitialization() {}

    /**
     * Initializes {@code root}'s parameters for inputs of {@code shapes}, handing each unit to
     * {@code keepShard} as soon as its parameters have values and releasing their full arrays after
     * it returns.
     *
     * @param root the model's top block, not initialized
     * @param units the units below the root, as the plan has them
     * @param manager the manager the parameters are made in
     * @param dataType the parameters' type
     * @param shapes the model's input shapes
     * @param initializers the initializer a parameter gets instead of its own while the model
     *     initializes, or null to keep its own: a {@link Placeholder} for one whose values another
     *     rank sends (its own initializers are restored afterwards)
     * @param keepShard keeps this rank's shard of a unit's parameters (they hold full arrays)
     * @return the largest bytes of full parameter arrays held at once
     */
    public static long initialize(
            Block root,
            List<PlannedUnit> units,
            NDManager manager,
            DataType dataType,
            Shape[] shapes,
            Function<Parameter, Initializer> initializers,
            Consumer<PlannedUnit> keepShard) {
        Set<Integer> done = new HashSet<>();
        long[] peak = {0};
        Consumer<PlannedUnit> onInitialized =
                unit -> {
                    // A block held in several places is initialized in each: kept once.
                    if (!done.add(unit.index())) {
                        return;
                    }
                    peak[0] = Math.max(peak[0], liveBytes(root));
                    keepShard.accept(unit);
                    // Not the unit's buffers: every rank keeps them whole.
                    unit.parameters().forEach(ParameterArrays::release);
                };
        List<BlockChildren> standIns = new ArrayList<>(units.size());
        Map<Parameter, Initializer> own = new IdentityHashMap<>();
        for (Pair<String, Parameter> pair : root.getParameters()) {
            Parameter parameter = pair.getValue();
            Initializer instead = own.containsKey(parameter) ? null : initializers.apply(parameter);
            if (instead != null) {
                own.put(parameter, parameter.getInitializer());
                parameter.setInitializer(instead);
            }
        }
        try {
            for (PlannedUnit unit : units) {
                Block standIn = new InitializingBlock(unit, onInitialized);
                standIns.add(BlockChildren.replace(unit.parents(), unit.block(), standIn));
            }
            root.initialize(manager, dataType, shapes);
        } finally {
            for (int i = standIns.size() - 1; i >= 0; i--) {
                standIns.get(i).restore();
            }
            own.forEach(Parameter::setInitializer);
        }
        // A parent that initializes a unit's parameters without calling its initialize.
        for (PlannedUnit unit : units) {
            if (!done.contains(unit.index())) {
                onInitialized.accept(unit);
            }
        }
        return Math.max(peak[0], liveBytes(root));
    }

    /**
     * Returns the bytes of the full arrays {@code block}'s parameters hold (a shared parameter
     * once; a released parameter's placeholder holds none).
     *
     * @param block a block
     * @return the bytes
     */
    public static long liveBytes(Block block) {
        Set<String> seen = new HashSet<>();
        long bytes = 0;
        for (Pair<String, Parameter> pair : block.getParameters()) {
            Parameter parameter = pair.getValue();
            NDArray array = parameter.isInitialized() ? parameter.getArray() : null;
            if (array != null && seen.add(parameter.getId())) {
                bytes += array.size() * array.getDataType().getNumOfBytes();
            }
        }
        return bytes;
    }

    /** Stands in for a unit's block while the model initializes. */
    private static final class InitializingBlock extends DelegatingBlock {

        private final PlannedUnit unit;
        private final Consumer<PlannedUnit> onInitialized;

        InitializingBlock(PlannedUnit unit, Consumer<PlannedUnit> onInitialized) {
            super(unit.block());
            this.unit = unit;
            this.onInitialized = onInitialized;
        }

        @Override
        public void initialize(NDManager manager, DataType dataType, Shape... inputShapes) {
            super.initialize(manager, dataType, inputShapes);
            onInitialized.accept(unit);
        }
    }
}
