package ai.djl.fsdp.trainer;

import ai.djl.Device;
import ai.djl.fsdp.checkpoint.PiecewiseDraws;
import ai.djl.fsdp.checkpoint.Placeholder;
import ai.djl.fsdp.checkpoint.ShardLoader;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ShardingMesh;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.internal.runtime.Collectives;
import ai.djl.fsdp.internal.runtime.FsdpUnit;
import ai.djl.fsdp.internal.runtime.ShardedModel;
import ai.djl.fsdp.internal.runtime.UnitInitialization;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.wrap.LayerClasses;
import ai.djl.fsdp.wrap.UnitPlan;
import ai.djl.fsdp.wrap.UnitPlan.PlannedUnit;
import ai.djl.fsdp.wrap.WrapPlanner;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.initializer.Initializer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Turns a model into a {@link ShardedModel}: plans the units, loads each unit's flat shards
 * (trainable and frozen apart; on the host with CPU offload), and hands them to the runtime. A
 * model given fresh is initialized one unit at a time ({@link UnitInitialization}), so its full
 * parameters are never all held at once.
 */
final class ModelSharding {

    /**
     * A sharded model and what its making cost.
     *
     * @param model the sharded model
     * @param initPeakBytes the largest bytes of full parameter arrays held at once while the model
     *     was initialized and sharded
     */
    record Sharded(ShardedModel model, long initPeakBytes) {}

    private final Block block;
    private final FsdpConfig config;
    private final ShardingMesh mesh;
    private final NDManager manager;
    private final ShardLoader loader;
    private final Map<Integer, List<FlatParameter>> loaded = new HashMap<>();

    private ModelSharding(
            Block block, TrainingSetup setup, NDManager manager, PiecewiseDraws fresh) {
        this.block = block;
        this.config = setup.fsdp();
        this.mesh = setup.mesh();
        this.manager = manager;
        ProcessGroup world = mesh.getWorld();
        ProcessGroup shardGroup = mesh.getShardGroup();
        int shardCount = config.isSharded() ? shardGroup.getSize() : 1;
        loader =
                new ShardLoader(
                        shardCount,
                        shardCount == 1 ? 0 : shardGroup.getRank(),
                        manager,
                        config.isSyncModuleStates() && world.getSize() > 1 ? world : null,
                        setup.options().getInitialValues(),
                        config.getFrozenStoragePrecision(),
                        config.isCpuOffload() ? Device.cpu() : null,
                        fresh);
    }

    /**
     * Shards a model whose parameters are initialized.
     *
     * @return the sharded model
     */
    static Sharded shard(Block block, TrainingSetup setup, NDManager manager) {
        if (!block.isInitialized()) {
            throw new IllegalStateException(
                    "The model's parameters are not initialized: call"
                            + " trainer.initialize(inputShapes) (or load the model) before training"
                            + " with FSDP.");
        }
        UnitPlan plan = plan(block, setup.fsdp());
        boolean[] recomputed = recomputed(plan, setup.fsdp());
        ModelSharding sharding = new ModelSharding(block, setup, manager, null);
        long peak = UnitInitialization.liveBytes(block);
        return new Sharded(sharding.build(plan, recomputed), peak);
    }

    /**
     * Initializes a fresh model unit by unit and shards it. A wrap policy that may read the
     * parameters' shapes (any but {@code byLayerClass}, such as {@code byMinParameters}) and
     * chooses no unit before they have them gets the whole model initialized first; any other
     * planning error is thrown before a parameter is initialized.
     *
     * @param parameterManager the manager the parameters are made in
     * @param dataType the parameters' type
     * @param shapes the model's input shapes
     * @return the sharded model
     */
    static Sharded initialize(
            Block block,
            NDManager parameterManager,
            DataType dataType,
            Shape[] shapes,
            TrainingSetup setup,
            NDManager manager) {
        WrapPolicy policy = setup.fsdp().getWrapPolicy();
        if (!(policy instanceof LayerClasses.Policy) && !WrapPlanner.choosesAny(block, policy)) {
            block.initialize(parameterManager, dataType, shapes);
            return shard(block, setup, manager);
        }
        UnitPlan plan = plan(block, setup.fsdp());
        // A recompute policy naming no unit fails before any parameter is initialized or loaded.
        boolean[] recomputed = recomputed(plan, setup.fsdp());
        FsdpConfig config = setup.fsdp();
        // Large frozen parameters are drawn in pieces kept in their shards' narrower type.
        Precision storage = config.getFrozenStoragePrecision();
        try (PiecewiseDraws fresh =
                storage == Precision.FLOAT32 ? null : new PiecewiseDraws(storage)) {
            ModelSharding sharding = new ModelSharding(block, setup, manager, fresh);
            // Rank 0's values replace every other rank's as the shards load: those draw none.
            boolean receives = sharding.loader.receives();
            Predicate<Parameter> buffers = config.getBuffers();
            Function<Parameter, Initializer> initializers =
                    parameter -> {
                        if (receives && !buffers.test(parameter)) {
                            return Placeholder.INSTANCE;
                        }
                        return fresh != null && fresh.draws(parameter)
                                ? fresh.initializer(parameter)
                                : null;
                    };
            return sharding.initialize(
                    plan, recomputed, parameterManager, dataType, shapes, initializers, fresh);
        }
    }

    /**
     * Initializes the model unit by unit, each unit's shards loaded as soon as it has values, and
     * shards it.
     */
    private Sharded initialize(
            UnitPlan plan,
            boolean[] recomputed,
            NDManager parameterManager,
            DataType dataType,
            Shape[] shapes,
            Function<Parameter, Initializer> initializers,
            PiecewiseDraws fresh) {
        List<PlannedUnit> units = plan.getUnits();
        try {
            long peak =
                    UnitInitialization.initialize(
                            block,
                            units.subList(1, units.size()),
                            parameterManager,
                            dataType,
                            shapes,
                            initializers,
                            unit -> {
                                load(unit);
                                if (fresh != null) {
                                    unit.parameters().forEach(fresh::release);
                                }
                            });
            checkSamePlan(plan, plan(block, config));
            return new Sharded(build(plan, recomputed), peak);
        } catch (RuntimeException e) {
            closeLoaded();
            // The units sharded so far hold empty placeholders: the block is left uninitialized
            // (its parameters hold no arrays) so that it can be initialized again.
            block.getParameters().values().forEach(Parameter::close);
            throw e;
        }
    }

    /** Returns for each unit but the root whether the config's policy recomputes it. */
    private static boolean[] recomputed(UnitPlan plan, FsdpConfig config) {
        List<PlannedUnit> units = plan.getUnits();
        return config.getActivationCheckpointing()
                .select(units.subList(1, units.size()).stream().map(PlannedUnit::block).toList());
    }

    /** Plans the units as the wrap policy chooses them in the block as it is now. */
    private static UnitPlan plan(Block block, FsdpConfig config) {
        return UnitPlan.of(block, config.getWrapPolicy(), config.getBuffers());
    }

    /** Loads {@code planned}'s shards unless they are loaded. */
    private void load(PlannedUnit planned) {
        if (loaded.containsKey(planned.index())) {
            return;
        }
        List<FlatParameter> flats = new ArrayList<>(3);
        loaded.put(planned.index(), flats);
        List<Parameter> trainable = planned.parameters(true);
        if (!trainable.isEmpty()) {
            flats.add(loader.load(planned.name() + "/trainable", true, trainable));
        }
        // A 4-bit base's packed codes keep a buffer of their own type, apart from frozen floats.
        Map<Boolean, List<Parameter>> frozen =
                planned.parameters(false).stream()
                        .collect(
                                Collectors.partitioningBy(p -> Precision.isFloating(p.getArray())));
        if (!frozen.get(true).isEmpty()) {
            flats.add(loader.load(planned.name() + "/frozen", false, frozen.get(true)));
        }
        if (!frozen.get(false).isEmpty()) {
            flats.add(loader.load(planned.name() + "/frozen-packed", false, frozen.get(false)));
        }
    }

    /**
     * Loads what is not loaded yet (in plan order) and makes the runtime's model, the units after
     * the root recomputed where {@code recomputed} says.
     */
    private ShardedModel build(UnitPlan plan, boolean[] recomputed) {
        List<FsdpUnit> units = new ArrayList<>();
        List<PlannedUnit> planned = plan.getUnits();
        try {
            for (PlannedUnit unit : planned) {
                load(unit);
                units.add(
                        new FsdpUnit(
                                unit.index(),
                                unit.name(),
                                unit.block(),
                                unit.parents(),
                                loaded.get(unit.index()),
                                unit.buffers(),
                                unit.index() > 0 && recomputed[unit.index() - 1]));
            }
            return new ShardedModel(
                    new Collectives(mesh, config.getExecutionOptions()),
                    units,
                    config.getExecutionOptions(),
                    config.isSyncBatchNorm());
        } catch (RuntimeException e) {
            closeLoaded();
            throw e;
        }
    }

    private void closeLoaded() {
        loaded.values().forEach(flats -> flats.forEach(FlatParameter::close));
        loaded.clear();
    }

    /**
     * A policy must choose the same units, owning the same parameters, before and after the
     * parameters have shapes.
     */
    private static void checkSamePlan(UnitPlan before, UnitPlan after) {
        List<String> names = describe(before);
        List<String> now = describe(after);
        if (!names.equals(now)) {
            throw new IllegalStateException(
                    "The model's units and their parameters differ before the parameters were"
                            + " initialized "
                            + names
                            + " and after "
                            + now
                            + ": FSDP initializes fresh parameters unit by unit, so neither the"
                            + " wrap policy nor the blocks' parameters may depend on the"
                            + " initialization. The model's parameters were released and it is"
                            + " left uninitialized: initialize it (Block.initialize) before"
                            + " creating the trainer, or use WrapPolicy.byLayerClass.");
        }
    }

    private static List<String> describe(UnitPlan plan) {
        return plan.getUnits().stream()
                .map(
                        unit ->
                                unit.name()
                                        + unit.parameters().stream()
                                                .map(Parameter::getName)
                                                .toList())
                .toList();
    }
}
