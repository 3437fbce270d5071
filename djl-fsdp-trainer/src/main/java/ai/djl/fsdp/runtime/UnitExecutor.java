package ai.djl.fsdp.runtime;

import ai.djl.fsdp.config.ExecutionOptions;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.TorchRandom;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs the passes over a sharded model: the root's gather for the whole pass, each unit call
 * (gather, prefetch of the next, compute, record, release), and backward through the tape.
 * Resharding after forward without recompute keeps each call's graph over releasable memory: the
 * unit's memory is released after its forward and refilled by the gather before its backward.
 *
 * <p>DJL exposes no autograd hooks, so a unit's call in a training forward runs on detached copies
 * of its inputs and hands its parent fresh leaves as outputs; the tape records each call. Backward
 * first runs from the loss through the root's graph, which leaves gradients on the output leaves
 * and the root's parameters, then walks the tape.
 */
final class UnitExecutor {

    private final Collectives collectives;
    private final ExecutionOptions options;
    private final FsdpUnit root;
    private final List<FsdpUnit> units;
    private final RecomputeSeeds seeds;
    private final BackwardTape tape;
    private final ModelBuffers buffers;

    private Phase phase = Phase.IDLE;
    private List<FsdpUnit> forwardOrder;
    private List<FsdpUnit> observedOrder = new ArrayList<>();
    private NDManager rootScope;
    private List<GradientLeaves> rootLeaves = List.of();
    private long peakGatheredBytes;

    /** The synchronized BatchNorm calls of the unit call that runs now with a graph, or null. */
    private List<NormCall> unitNorms;

    UnitExecutor(
            Collectives collectives,
            ExecutionOptions options,
            FsdpUnit root,
            List<FsdpUnit> units,
            ModelBuffers buffers) {
        this.collectives = collectives;
        this.buffers = buffers;
        this.options = options;
        this.root = root;
        this.units = units;
        this.forwardOrder = units;
        seeds = new RecomputeSeeds(collectives.getGroup().getRank());
        tape = new BackwardTape(collectives, options.prefetch());
        if (options.reshardAfterForward()) {
            units.stream()
                    .filter(unit -> !unit.isRecomputed())
                    .forEach(FsdpUnit::useReleasableMemory);
        }
    }

    /**
     * Prepares a forward pass: gathers the root's parameters, which stay gathered until the pass
     * (and, when {@code training}, its backward) is over, and starts gathering the first unit.
     */
    void beginForward(boolean training, NDManager manager) {
        if (phase != Phase.IDLE) {
            // A training forward that was never followed by backward.
            discardPass();
        }
        phase = training ? Phase.RECORDING : Phase.INFERENCE;
        collectives.startGather(root);
        if (options.prefetch() && !forwardOrder.isEmpty()) {
            collectives.startGather(forwardOrder.get(0));
        }
        root.awaitGather();
        notePeak();
        if (training) {
            // The root's randomness (embedding dropout) is a function of the step too, so a
            // resumed run draws what the uninterrupted one drew.
            TorchRandom.seed(seeds.of(root, -1));
        }
        rootScope = manager.newSubManager();
        rootScope.setName("fsdp-root");
        rootLeaves = root.materialize(training, collectives.getPrecision().param(), rootScope);
    }

    /** Runs one call of {@code unit} within the current pass. */
    NDList call(
            FsdpUnit unit,
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        boolean recording = phase == Phase.RECORDING;
        collectives.startGather(unit);
        int callIndex = observedOrder.size();
        observedOrder.add(unit);
        if (options.prefetch() && callIndex + 1 < forwardOrder.size()) {
            collectives.startGather(forwardOrder.get(callIndex + 1));
        }
        unit.awaitGather();
        notePeak();
        NDManager callerManager = inputs.head().getManager();
        NDManager scope = callerManager.newSubManager();
        scope.setName("fsdp-unit-" + unit.getName());
        boolean keepGraph = recording && !unit.isRecomputed();
        long seed = seeds.of(unit, callIndex);
        UnitGraph graph =
                run(
                        unit,
                        collectives.getPrecision().param(),
                        parameterStore,
                        leavesOf(inputs, scope, keepGraph),
                        scope,
                        keepGraph,
                        recording ? seed : null,
                        training,
                        params);
        NDList outputLeaves = new NDList(graph.outputs().size());
        for (NDArray output : graph.outputs()) {
            NDArray leaf = output.stopGradient();
            leaf.attach(callerManager);
            if (recording && Precision.isFloating(leaf)) {
                leaf.setRequiresGradient(true);
            }
            outputLeaves.add(leaf);
        }
        if (!keepGraph) {
            scope.close();
            if (!recording || options.reshardAfterForward()) {
                unit.reshard();
            }
        } else if (options.reshardAfterForward()) {
            // The graph refers to the gathered buffers: their memory goes, their addresses stay.
            unit.holdForGraph();
            unit.reshard();
        }
        if (recording) {
            tape.record(
                    new UnitCall(
                            unit, inputs, params, seed, outputLeaves, keepGraph ? graph : null));
        }
        return outputLeaves;
    }

    /**
     * Runs backward from {@code loss} through the whole model and adds each rank's part of the
     * reduced gradients, times {@code scale}, to the shards' gradients.
     */
    void backward(NDArray loss, ParameterStore parameterStore, float scale) {
        if (phase != Phase.RECORDING) {
            throw new IllegalStateException(
                    "backward needs a training forward first: call trainer.forward inside the"
                            + " gradient collector (trainer.newGradientCollector())");
        }
        try (NDManager scope = loss.getManager().newSubManager()) {
            // The loss is float32 (a narrower one is cast up): DJL makes ones only of its types.
            NDArray loss32 = Precision.FLOAT32.cast(loss);
            if (loss32 != loss) {
                loss32.attach(scope);
            }
            NDArray ones = loss32.onesLike();
            ones.attach(scope);
            Autograd.backward(loss32, ones);
        }
        tape.run(call -> recompute(call, parameterStore), scale);
        PendingReduction rootReduction =
                collectives.startReduction(root, rootLeaves, scale, rootScope);
        tape.completeInFlight();
        rootReduction.complete();
        forwardOrder = List.copyOf(observedOrder);
        discardPass();
        seeds.endMicroBatch();
    }

    /** Returns the largest bytes of gathered buffers the units have held at once. */
    long getPeakGatheredBytes() {
        return peakGatheredBytes;
    }

    /** Measures the gathered buffers held now (including prefetched ones) against the peak. */
    private void notePeak() {
        long bytes = root.getGatheredResidentBytes();
        for (FsdpUnit unit : units) {
            bytes += unit.getGatheredResidentBytes();
        }
        peakGatheredBytes = Math.max(peakGatheredBytes, bytes);
    }

    /** Counts an optimizer step, for the recompute seeds. */
    void endStep() {
        seeds.endStep();
    }

    /** Sets the optimizer steps taken, for the seeds. */
    void setStep(long step) {
        seeds.setStep(step);
    }

    /** Rebuilds the graph of a call whose forward kept none, with the call's seed. */
    private UnitGraph recompute(UnitCall call, ParameterStore parameterStore) {
        collectives.gather(call.unit());
        notePeak();
        NDManager scope = call.inputs().head().getManager().newSubManager();
        // The forward updated the buffers (BatchNorm's running statistics) once already.
        return buffers.withScratchCopies(
                scope,
                () ->
                        run(
                                call.unit(),
                                collectives.getPrecision().param(),
                                parameterStore,
                                leavesOf(call.inputs(), scope, true),
                                scope,
                                true,
                                call.seed(),
                                true,
                                call.params()));
    }

    /**
     * Materializes {@code unit}'s parameters in {@code scope}, seeds the generator when a seed is
     * given, and runs the unit's block with grad mode set to {@code withGraph}.
     */
    private UnitGraph run(
            FsdpUnit unit,
            Precision precision,
            ParameterStore parameterStore,
            NDList inputLeaves,
            NDManager scope,
            boolean withGraph,
            Long seed,
            boolean training,
            PairList<String, Object> params) {
        List<GradientLeaves> flatLeaves = unit.materialize(withGraph, precision, scope);
        List<NormCall> norms = new ArrayList<>();
        unitNorms = withGraph ? norms : null;
        try {
            NDList outputs =
                    Autograd.withGradMode(
                            withGraph,
                            () -> {
                                if (seed != null) {
                                    TorchRandom.seed(seed);
                                }
                                return unit.getBlock()
                                        .forward(parameterStore, inputLeaves, training, params);
                            });
            return new UnitGraph(scope, inputLeaves, outputs, flatLeaves, norms);
        } finally {
            unitNorms = null;
            unit.clearViews();
        }
    }

    /**
     * Returns whether a synchronized BatchNorm called now must keep a {@link NormCall} for
     * backward: in a training pass, where a graph is recorded.
     */
    boolean recordsNorms() {
        return phase == Phase.RECORDING && Autograd.isGradMode();
    }

    /**
     * Keeps a synchronized BatchNorm's call for backward: with the unit call that runs now, or on
     * the tape when it runs in the root.
     */
    void record(NormCall norm) {
        if (unitNorms != null) {
            unitNorms.add(norm);
        } else {
            tape.record(norm);
        }
    }

    /**
     * Detached copies of {@code inputs} in {@code scope}; if asked, those in the caller's graph
     * become leaves that collect their gradient (a mask or other constant input gets none).
     */
    private static NDList leavesOf(NDList inputs, NDManager scope, boolean requireGradient) {
        NDList leaves = new NDList(inputs.size());
        for (NDArray input : inputs) {
            NDArray leaf = input.stopGradient();
            leaf.attach(scope);
            if (requireGradient && Autograd.isInGraph(input)) {
                leaf.setRequiresGradient(true);
            }
            leaves.add(leaf);
        }
        return leaves;
    }

    /** Drops a pass's state: recorded calls, views and gathers; every unit is resharded. */
    void discardPass() {
        tape.clear();
        observedOrder = new ArrayList<>();
        phase = Phase.IDLE;
        if (rootScope != null) {
            rootScope.close();
            rootScope = null;
        }
        rootLeaves = List.of();
        root.reshard();
        // The graphs are closed: released buffers can be unmapped.
        units.forEach(FsdpUnit::free);
    }
}
