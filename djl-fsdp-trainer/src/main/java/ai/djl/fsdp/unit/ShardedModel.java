package ai.djl.fsdp.unit;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.param.ParameterSource;
import ai.djl.fsdp.wrap.ChildSwap;
import ai.djl.fsdp.wrap.WrapPlanner;
import ai.djl.fsdp.wrap.WrapPolicy;
import ai.djl.fsdp.wrap.WrapTarget;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.pytorch.jni.JniUtils;
import ai.djl.training.ParameterStore;
import ai.djl.util.Pair;
import ai.djl.util.PairList;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model whose parameters are sharded into FSDP units, and the execution of its steps.
 *
 * <p>DJL exposes no autograd hooks, so units are activation-checkpoint boundaries. A unit's call in
 * a training forward runs on detached copies of its inputs and hands its parent fresh leaves as
 * outputs; a tape records each call. Backward first runs from the loss through the root's graph,
 * which leaves gradients on the output leaves and the root's parameters; the tape is then walked in
 * reverse (a topological order, so each unit's output gradients are complete when it is reached):
 * the unit's graph is rebuilt by recompute (or kept from forward), a vector-Jacobian product from
 * its output gradients fills its flat gradients, which are reduced over the ranks, and its input
 * gradients are pushed into the parent's graph.
 */
public final class ShardedModel implements AutoCloseable {

    private final ProcessGroup group;
    private final boolean recompute;
    private final boolean prefetch;
    private final FsdpUnit root;
    private final List<FsdpUnit> units;
    private final List<FsdpUnit> allUnits;
    private final List<FlatParameter> flatParameters;
    private final Map<String, FsdpUnit> ownerByParameterId;
    private final List<ChildSwap> swaps;
    private final List<UnitCall> tape = new ArrayList<>();
    private Runnable pendingReduction;

    private List<FsdpUnit> forwardOrder;
    private List<FsdpUnit> observedOrder = new ArrayList<>();
    private boolean recording;
    private NDManager rootScope;
    private List<NDArray> rootLeaves = List.of();
    private long step;
    private long microBatch;

    private ShardedModel(
            ProcessGroup group,
            boolean recompute,
            boolean prefetch,
            FsdpUnit root,
            List<FsdpUnit> units,
            Map<String, FsdpUnit> ownerByParameterId,
            List<ChildSwap> swaps) {
        this.group = group;
        this.recompute = recompute;
        this.prefetch = prefetch;
        this.root = root;
        this.units = units;
        List<FsdpUnit> all = new ArrayList<>(units.size() + 1);
        all.add(root);
        all.addAll(units);
        this.allUnits = Collections.unmodifiableList(all);
        List<FlatParameter> flats = new ArrayList<>();
        allUnits.forEach(unit -> flats.addAll(unit.getFlatParameters()));
        this.flatParameters = Collections.unmodifiableList(flats);
        this.ownerByParameterId = ownerByParameterId;
        this.swaps = swaps;
        forwardOrder = units;
    }

    /**
     * Shards the parameters of {@code block}, initialized and identical on every rank (or made so
     * from rank 0 with {@code syncModuleStates}), and puts unit wrappers in the block tree.
     *
     * @param block the model's top block
     * @param policy chooses the units
     * @param group the ranks
     * @param sharded whether flat parameters are split over the ranks (else replicated)
     * @param recompute whether units run forward without a graph and are recomputed in backward
     * @param prefetch whether the next unit's gather starts before the current unit computes
     * @param syncModuleStates whether rank 0's parameter values are broadcast first
     * @param manager the manager the shards are kept under
     * @param source where each rank reads its shards from, or null to shard the parameters' own
     *     arrays; when a source is given, {@code syncModuleStates} is ignored: every rank reads the
     *     same source
     * @return the sharded model
     */
    public static ShardedModel shard(
            Block block,
            WrapPolicy policy,
            ProcessGroup group,
            boolean sharded,
            boolean recompute,
            boolean prefetch,
            boolean syncModuleStates,
            NDManager manager,
            ParameterSource source) {
        if (!block.isInitialized()) {
            throw new IllegalStateException(
                    "The model's parameters are not initialized: call"
                            + " trainer.initialize(inputShapes) (or load the model) before training"
                            + " with FSDP.");
        }
        List<WrapTarget> targets = WrapPlanner.plan(block, policy);
        int shardCount = sharded ? group.size() : 1;
        ProcessGroup syncFrom =
                syncModuleStates && source == null && group.size() > 1 ? group : null;

        Map<String, FsdpUnit> owners = new HashMap<>();
        Map<String, String> unitOfParameter = new HashMap<>();
        List<FsdpUnit> units = new ArrayList<>();
        for (WrapTarget target : targets) {
            List<Parameter> parameters = distinct(target.block());
            for (Parameter parameter : parameters) {
                String previous = unitOfParameter.putIfAbsent(parameter.getId(), target.path());
                if (previous != null) {
                    throw new IllegalArgumentException(
                            "Parameter "
                                    + parameter.getName()
                                    + " is shared by units "
                                    + previous
                                    + " and "
                                    + target.path()
                                    + "; a shared parameter must live outside the units (in the"
                                    + " root). Choose a wrap policy that leaves its users out.");
                }
            }
            FsdpUnit unit =
                    new FsdpUnit(
                            units.size() + 1,
                            target.path(),
                            target.block(),
                            flatten(
                                    target.path(),
                                    parameters,
                                    shardCount,
                                    group,
                                    manager,
                                    syncFrom,
                                    source));
            parameters.forEach(p -> owners.put(p.getId(), unit));
            units.add(unit);
        }
        List<Parameter> rootParameters = new ArrayList<>();
        for (Parameter parameter : distinct(block)) {
            if (!owners.containsKey(parameter.getId())) {
                rootParameters.add(parameter);
            }
        }
        FsdpUnit root =
                new FsdpUnit(
                        0,
                        "root",
                        block,
                        flatten(
                                "root",
                                rootParameters,
                                shardCount,
                                group,
                                manager,
                                syncFrom,
                                source));
        rootParameters.forEach(p -> owners.put(p.getId(), root));

        List<ChildSwap> swaps = new ArrayList<>();
        ShardedModel model =
                new ShardedModel(
                        group,
                        recompute,
                        prefetch,
                        root,
                        Collections.unmodifiableList(units),
                        owners,
                        swaps);
        for (int i = 0; i < targets.size(); i++) {
            WrapTarget target = targets.get(i);
            swaps.add(
                    ChildSwap.replace(
                            target.parent(), target.block(), new UnitBlock(units.get(i), model)));
        }
        model.releaseParameterArrays();
        return model;
    }

    /** Returns the units, root first. */
    public List<FsdpUnit> allUnits() {
        return allUnits;
    }

    /** Returns every flat parameter, the root's first. */
    public List<FlatParameter> flatParameters() {
        return flatParameters;
    }

    /**
     * Prepares a forward pass: gathers the root's parameters, which stay gathered until the pass
     * (and, when {@code training}, its backward) is over, and starts gathering the first unit.
     *
     * @param training whether backward follows: the units' calls are then recorded
     * @param manager the manager the root's views are made under
     */
    public void beginForward(boolean training, NDManager manager) {
        if (recording || rootScope != null) {
            // A training forward that was never followed by backward.
            discardPass();
        }
        recording = training;
        root.startGather(group);
        if (prefetch && !forwardOrder.isEmpty()) {
            forwardOrder.get(0).startGather(group);
        }
        root.awaitGather();
        rootScope = manager.newSubManager();
        rootScope.setName("fsdp-root");
        rootLeaves = root.materialize(training, rootScope);
    }

    /** Ends a forward pass that has no backward: frees the root's and the units' gathers. */
    public void endInference() {
        discardPass();
    }

    /**
     * Returns the array a block should compute with for {@code parameter}.
     *
     * @param parameter a parameter of the model
     * @return its view in the gathered buffer
     */
    public NDArray valueOf(Parameter parameter) {
        FsdpUnit owner = ownerByParameterId.get(parameter.getId());
        if (owner == null) {
            throw new IllegalArgumentException(
                    "Parameter " + parameter.getName() + " is not part of the FSDP model");
        }
        NDArray view = owner.viewOf(parameter);
        if (view == null) {
            throw new IllegalStateException(
                    "Parameter "
                            + parameter.getName()
                            + " of FSDP unit "
                            + owner.getName()
                            + " is read outside that unit's forward, when it is not gathered."
                            + " A parameter used by several blocks must live in the root: choose"
                            + " a wrap policy that leaves its users out of the units.");
        }
        return view;
    }

    NDList callUnit(
            FsdpUnit unit,
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        unit.startGather(group);
        int callIndex = observedOrder.size();
        observedOrder.add(unit);
        if (prefetch && callIndex + 1 < forwardOrder.size()) {
            forwardOrder.get(callIndex + 1).startGather(group);
        }
        unit.awaitGather();
        NDManager callerManager = inputs.head().getManager();
        NDManager scope = callerManager.newSubManager();
        scope.setName("fsdp-unit-" + unit.getName());
        boolean buildGraph = recording && !recompute;
        NDList inputLeaves = leavesOf(inputs, scope, buildGraph);
        int seed = seed(unit, callIndex);
        UnitForward forward =
                forwardUnit(
                        unit,
                        parameterStore,
                        inputLeaves,
                        scope,
                        buildGraph,
                        recording,
                        seed,
                        training,
                        params);
        List<NDArray> flatLeaves = forward.flatLeaves();
        NDList outputs = forward.outputs();
        NDList outputLeaves = new NDList(outputs.size());
        for (NDArray output : outputs) {
            NDArray leaf = output.stopGradient();
            leaf.attach(callerManager);
            if (recording && leaf.getDataType().isFloating()) {
                leaf.setRequiresGradient(true);
            }
            outputLeaves.add(leaf);
        }
        if (!recording) {
            scope.close();
            unit.reshard();
            return outputLeaves;
        }
        UnitCall call = new UnitCall(unit, inputs, params, seed, outputLeaves);
        if (buildGraph) {
            call.scope = scope;
            call.inputLeaves = inputLeaves;
            call.outputs = outputs;
            call.flatLeaves = flatLeaves;
        } else {
            scope.close();
            unit.reshard();
        }
        tape.add(call);
        return outputLeaves;
    }

    /**
     * Runs backward from {@code loss} through the whole model and adds each rank's part of the
     * reduced gradients, times {@code scale}, to the shards' gradients.
     *
     * @param loss the loss of this rank's micro-batch
     * @param parameterStore the store blocks read parameters from (for recompute)
     * @param scale the factor for this micro-batch's gradients (1 / accumulation steps)
     */
    public void backward(NDArray loss, ParameterStore parameterStore, float scale) {
        if (!recording) {
            throw new IllegalStateException(
                    "backward needs a training forward first: call trainer.forward inside the"
                            + " gradient collector (trainer.newGradientCollector())");
        }
        try (NDManager scope = loss.getManager().newSubManager()) {
            NDArray ones = loss.onesLike();
            ones.attach(scope);
            Gradients.backward(loss, ones);
        }
        for (int i = tape.size() - 1; i >= 0; i--) {
            if (prefetch && i > 0) {
                tape.get(i - 1).unit.startGather(group);
            }
            backwardThrough(tape.get(i), parameterStore, scale);
        }
        Runnable rootReduction = root.startGradientReduction(rootLeaves, group, scale);
        finishPendingReduction();
        rootReduction.run();
        forwardOrder = List.copyOf(observedOrder);
        tape.clear();
        discardPass();
        microBatch++;
    }

    /** Counts an optimizer step, for the recompute seeds. */
    public void endStep() {
        step++;
        microBatch = 0;
    }

    /** A unit's forward: the flat leaves it was materialized with, and its outputs. */
    private record UnitForward(List<NDArray> flatLeaves, NDList outputs) {}

    /**
     * Materializes {@code unit}'s parameters in {@code scope}, reseeds the engine when {@code
     * reseed}, runs the unit's block with grad mode set to {@code withGraph}, then restores the
     * grad mode and clears the unit's views.
     */
    private UnitForward forwardUnit(
            FsdpUnit unit,
            ParameterStore parameterStore,
            NDList inputLeaves,
            NDManager scope,
            boolean withGraph,
            boolean reseed,
            int seed,
            boolean training,
            PairList<String, Object> params) {
        List<NDArray> flatLeaves = unit.materialize(withGraph, scope);
        boolean gradMode = JniUtils.isGradMode();
        NDList outputs;
        try {
            JniUtils.setGradMode(withGraph);
            if (reseed) {
                parameterStore.getManager().getEngine().setRandomSeed(seed);
            }
            outputs = unit.getBlock().forward(parameterStore, inputLeaves, training, params);
        } finally {
            JniUtils.setGradMode(gradMode);
            unit.clearViews();
        }
        return new UnitForward(flatLeaves, outputs);
    }

    private void backwardThrough(UnitCall call, ParameterStore parameterStore, float scale) {
        FsdpUnit unit = call.unit;
        if (call.scope == null) {
            unit.startGather(group);
            unit.awaitGather();
            call.scope = call.inputs.head().getManager().newSubManager();
            call.inputLeaves = leavesOf(call.inputs, call.scope, true);
            UnitForward forward =
                    forwardUnit(
                            unit,
                            parameterStore,
                            call.inputLeaves,
                            call.scope,
                            true,
                            true,
                            call.seed,
                            true,
                            call.params);
            call.flatLeaves = forward.flatLeaves();
            call.outputs = forward.outputs();
        }
        NDManager scope = call.scope;
        try {
            NDArray surrogate = null;
            for (int j = 0; j < call.outputs.size(); j++) {
                NDArray gradient = Gradients.of(call.outputLeaves.get(j));
                if (gradient == null) {
                    continue;
                }
                gradient.attach(scope);
                // d/d(out) of sum(out * g) is g: one backward for all of the unit's outputs.
                NDArray term = call.outputs.get(j).mul(gradient).sum();
                surrogate = surrogate == null ? term : surrogate.add(term);
            }
            if (surrogate != null) {
                NDArray ones = surrogate.onesLike();
                Gradients.backward(surrogate, ones);
            }
            Runnable reduction = unit.startGradientReduction(call.flatLeaves, group, scale);
            // The reduction runs while the input gradients travel on through the parent's graph
            // and, after that, while the previous unit recomputes.
            for (int j = 0; j < call.inputs.size(); j++) {
                NDArray leaf = call.inputLeaves.get(j);
                NDArray gradient = leaf.getDataType().isFloating() ? Gradients.of(leaf) : null;
                if (gradient != null) {
                    gradient.attach(scope);
                    Gradients.pushInto(call.inputs.get(j), gradient);
                }
            }
            finishPendingReduction();
            pendingReduction =
                    () -> {
                        try {
                            reduction.run();
                        } finally {
                            scope.close();
                        }
                    };
        } catch (RuntimeException e) {
            scope.close();
            throw e;
        } finally {
            unit.reshard();
        }
    }

    /** Completes the gradient reduction in flight, if any, and frees what it reduced. */
    private void finishPendingReduction() {
        Runnable reduction = pendingReduction;
        pendingReduction = null;
        if (reduction != null) {
            reduction.run();
        }
    }

    /** Detached copies of {@code inputs} in {@code scope}; float ones become leaves if asked. */
    private static NDList leavesOf(NDList inputs, NDManager scope, boolean requireGradient) {
        NDList leaves = new NDList(inputs.size());
        for (NDArray input : inputs) {
            NDArray leaf = input.stopGradient();
            leaf.attach(scope);
            if (requireGradient && leaf.getDataType().isFloating()) {
                leaf.setRequiresGradient(true);
            }
            leaves.add(leaf);
        }
        return leaves;
    }

    /**
     * The engine seed for a unit's call: a function of (step, micro-batch, unit, call, rank) so
     * recompute replays the first pass's randomness (dropout) and ranks draw differently.
     */
    private int seed(FsdpUnit unit, int callIndex) {
        long h = step;
        h = h * 0x9E3779B97F4A7C15L + microBatch;
        h = h * 0x9E3779B97F4A7C15L + unit.getIndex();
        h = h * 0x9E3779B97F4A7C15L + callIndex;
        h = h * 0x9E3779B97F4A7C15L + group.rank();
        h ^= h >>> 31;
        return (int) (h ^ (h >>> 32)) & Integer.MAX_VALUE;
    }

    /** Drops a forward pass's state: recorded calls, views and gathers. */
    private void discardPass() {
        finishPendingReduction();
        for (UnitCall call : tape) {
            if (call.scope != null) {
                call.scope.close();
            }
        }
        tape.clear();
        observedOrder = new ArrayList<>();
        recording = false;
        if (rootScope != null) {
            rootScope.close();
            rootScope = null;
        }
        rootLeaves = List.of();
        allUnits().forEach(FsdpUnit::reshard);
    }

    /**
     * Gives every parameter its full array again and takes the unit wrappers out of the block tree:
     * the model is an ordinary DJL model once more. Every rank must call it.
     */
    public void unshard() {
        restoreBlockTree();
        gatherParameterArrays();
    }

    /**
     * Takes the unit wrappers out of the block tree without gathering: the parameters keep their
     * empty arrays (for a job whose model was saved unit by unit and is not used whole again).
     */
    public void restoreBlockTree() {
        discardPass();
        for (int i = swaps.size() - 1; i >= 0; i--) {
            swaps.get(i).restore();
        }
        swaps.clear();
    }

    /** Gives every parameter a copy of its full array (a collective: every rank calls it). */
    public void gatherParameterArrays() {
        allUnits().forEach(unit -> unit.restoreParameterArrays(group));
    }

    /** Frees the arrays {@link #gatherParameterArrays()} gave the parameters. */
    public void releaseParameterArrays() {
        allUnits().forEach(FsdpUnit::releaseParameterArrays);
    }

    /**
     * Runs {@code visitor} on every unit in turn, the root last, with that unit's parameters
     * holding their full arrays and every other unit's empty: a rank holds one unit's parameters at
     * a time, never the whole model (to merge adapters and export a model larger than one rank's
     * memory, say). A collective: every rank calls it, and every rank's visitor must return or
     * throw alike, or the other ranks wait on the next unit's gather.
     *
     * @param visitor what to run on each unit
     * @throws IOException if the visitor throws it; the unit's arrays are freed first
     */
    public void forEachUnitGathered(UnitVisitor visitor) throws IOException {
        discardPass();
        List<FsdpUnit> order = new ArrayList<>(units);
        order.add(root);
        for (FsdpUnit unit : order) {
            unit.restoreParameterArrays(group);
            try {
                visitor.visit(unit);
            } finally {
                unit.releaseParameterArrays();
            }
        }
    }

    @Override
    public void close() {
        discardPass();
        allUnits().forEach(FsdpUnit::close);
    }

    private static List<FlatParameter> flatten(
            String name,
            List<Parameter> parameters,
            int shardCount,
            ProcessGroup group,
            NDManager manager,
            ProcessGroup syncFrom,
            ParameterSource source) {
        List<Parameter> trainable = new ArrayList<>();
        List<Parameter> frozen = new ArrayList<>();
        for (Parameter parameter : parameters) {
            (parameter.requiresGradient() ? trainable : frozen).add(parameter);
        }
        int shardIndex = shardCount == 1 ? 0 : group.rank();
        List<FlatParameter> flats = new ArrayList<>(2);
        for (boolean isTrainable : new boolean[] {true, false}) {
            List<Parameter> members = isTrainable ? trainable : frozen;
            if (members.isEmpty()) {
                continue;
            }
            String id = name + (isTrainable ? "/trainable" : "/frozen");
            flats.add(
                    FlatParameter.create(
                            id,
                            isTrainable,
                            members,
                            shardCount,
                            shardIndex,
                            manager,
                            syncFrom,
                            source));
        }
        return flats;
    }

    /** The block's parameters, each shared parameter once, in DJL's order. */
    private static List<Parameter> distinct(Block block) {
        Map<String, Parameter> byId = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : block.getParameters()) {
            byId.putIfAbsent(pair.getValue().getId(), pair.getValue());
        }
        return new ArrayList<>(byId.values());
    }
}
