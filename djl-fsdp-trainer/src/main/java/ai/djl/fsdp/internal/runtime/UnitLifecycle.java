package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.internal.config.ExecutionOptions;
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
 * One unit's part in a step, as FSDP2's {@code FSDPParamGroup}: the gather of its parameters in the
 * compute type, its forward (on detached inputs, with a graph or without one when it is
 * recomputed), resharding or releasing its parameters after forward, the graph its backward runs
 * through (kept, refilled by a gather, or rebuilt by recompute with the forward's seed), the
 * vector-Jacobian product from its output gradients, and the start of its gradient reduction in the
 * reduce type. Where the unit's parameters are is {@link FsdpUnit}'s state; the collectives are
 * {@link Collectives}'; the order of calls and the gradients handed between them are the {@link
 * ShardedPasses}' and the {@link BackwardTape}'s.
 */
final class UnitLifecycle {

    private final FsdpUnit unit;
    private final Collectives collectives;
    private final Precision computeType;
    private final Precision reduceType;
    private final boolean reshardAfterForward;
    private final ModelBuffers buffers;
    private final GatheredPeak peak;

    /** The synchronized BatchNorm calls of the call that runs now with a graph, or null. */
    private List<NormCall> recordingNorms;

    UnitLifecycle(
            FsdpUnit unit,
            Collectives collectives,
            ExecutionOptions options,
            ModelBuffers buffers,
            GatheredPeak peak) {
        this.unit = unit;
        this.collectives = collectives;
        computeType = options.computeType();
        reduceType = options.reduceType();
        reshardAfterForward = options.reshardAfterForward();
        this.buffers = buffers;
        this.peak = peak;
        if (reshardAfterForward && !unit.isRecomputed() && !unit.isRoot()) {
            // Its graph outlives its parameters' memory after forward.
            unit.useReleasableMemory();
        }
    }

    /** Returns the unit. */
    FsdpUnit unit() {
        return unit;
    }

    /** Starts gathering the unit's parameters in the compute type, unless they are on their way. */
    void startGather() {
        collectives.startGather(unit, computeType);
    }

    /** Gathers the unit's parameters and waits until they are whole. */
    void gather() {
        startGather();
        unit.awaitGather();
        peak.note();
    }

    /**
     * Makes the root's parameters readable for a whole pass, after its gather: with {@code
     * training}, their gradient leaves.
     */
    List<GradientLeaves> materializeRoot(boolean training, NDManager scope) {
        unit.awaitGather();
        peak.note();
        return unit.materialize(training, computeType, scope);
    }

    /**
     * Runs one call of the unit: waits for its gather, runs its block on detached copies of {@code
     * inputs} (with a graph when the call needs a backward and the unit is not recomputed), hands
     * back fresh output leaves, and reshards or releases the parameters as the settings say.
     *
     * <p>In a recording pass a call needs a backward when the unit trains or one of its inputs is
     * in the parent's graph: a call that meets neither (a frozen token table under LoRA, given
     * token ids) hands back outputs no gradient reaches, is left off the tape, and is resharded at
     * once, so backward never gathers it again, as FSDP2 gathers a module in backward only when a
     * gradient reaches its outputs. Gradients reach a unit only through its inputs (arrays in
     * {@code params} are never made leaves), so the inputs alone are looked at.
     *
     * @param seed the generator seed of the call; applied when {@code recording}
     * @return the call, its graph kept when there is one
     */
    UnitCall forward(
            ParameterStore parameterStore,
            NDList inputs,
            boolean recording,
            boolean training,
            PairList<String, Object> params,
            long seed) {
        unit.awaitGather();
        peak.note();
        boolean needsBackward =
                recording && (unit.isTrainable() || inputs.stream().anyMatch(Autograd::isInGraph));
        NDManager callerManager = inputs.head().getManager();
        NDManager scope = callerManager.newSubManager();
        scope.setName("fsdp-unit-" + unit.getName());
        boolean keepGraph = needsBackward && !unit.isRecomputed();
        UnitGraph graph =
                run(
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
            if (needsBackward && Precision.isFloating(leaf)) {
                leaf.setRequiresGradient(true);
            }
            outputLeaves.add(leaf);
        }
        if (!keepGraph) {
            scope.close();
            if (!needsBackward || reshardAfterForward) {
                unit.reshard();
            }
        } else if (reshardAfterForward) {
            // The graph refers to the gathered buffers: their memory goes, their addresses stay.
            unit.holdForGraph();
            unit.reshard();
        }
        return new UnitCall(
                this, inputs, params, seed, outputLeaves, keepGraph ? graph : null, needsBackward);
    }

    /**
     * Returns the graph {@code call}'s backward runs through: the one kept from forward (gathered
     * into the same addresses again if its parameters were released), or one rebuilt by running the
     * call again with its seed.
     */
    UnitGraph graphForBackward(UnitCall call, ParameterStore parameterStore) {
        if (call.graph() != null) {
            if (unit.isHeldByGraph()) {
                // Released after forward: refill the addresses the kept graph reads.
                gather();
            }
            return call.graph();
        }
        gather();
        NDManager scope = call.inputs().head().getManager().newSubManager();
        // The forward updated the buffers (BatchNorm's running statistics) once already.
        return buffers.withScratchCopies(
                scope,
                () ->
                        run(
                                parameterStore,
                                leavesOf(call.inputs(), scope, true),
                                scope,
                                true,
                                call.seed(),
                                true,
                                call.params()));
    }

    /**
     * Runs the unit's backward through {@code graph} from its outputs' gradients (null where an
     * output received none), then the synchronized BatchNorm calls inside it, the last first, and
     * starts reducing its flat gradients; the gradients of the graph's input leaves are then ready.
     *
     * @return the reduction in flight, owning the flat gradients it reads (a manager of their own,
     *     beside the graph's scope): the graph can be closed as soon as its input gradients are
     *     handed on, which frees the unit's activations and, for a recomputed unit, the gathered
     *     parameters its graph refers to
     */
    PendingReduction backward(UnitGraph graph, List<NDArray> outputGradients, float scale) {
        backwardFromOutputs(graph, outputGradients);
        // Synchronized BatchNorm cut the unit's graph: the last first, each pushes its input's
        // gradient on towards the unit's inputs and the earlier ones.
        for (int k = graph.norms().size() - 1; k >= 0; k--) {
            graph.norms().get(k).backward(collectives);
        }
        NDManager gradients = graph.scope().getParentManager().newSubManager();
        gradients.setName("fsdp-reduce-" + unit.getName());
        PendingReduction reduction;
        try {
            reduction = startReduction(graph.flatLeaves(), scale, gradients);
        } catch (RuntimeException e) {
            gradients.close();
            throw e;
        }
        reduction.releaseWhenDone(gradients);
        return reduction;
    }

    /**
     * Runs the vector-Jacobian product from the unit's outputs with their gradients: straight from
     * the output when one received a gradient (a transformer block's case), else from {@code
     * sum(out * g)} over those that did, in float32 (DJL makes the ones that backward starts from
     * only of its own types): d/d(out) of it is g, so one backward serves all of them. Outputs
     * computed from nothing trainable (frozen parameters, a data input) have no graph to run.
     */
    private static void backwardFromOutputs(UnitGraph graph, List<NDArray> outputGradients) {
        List<NDArray> outputs = new ArrayList<>(outputGradients.size());
        List<NDArray> gradients = new ArrayList<>(outputGradients.size());
        for (int j = 0; j < outputGradients.size(); j++) {
            NDArray gradient = outputGradients.get(j);
            if (gradient == null) {
                continue;
            }
            gradient.attach(graph.scope());
            NDArray output = graph.outputs().get(j);
            if (Autograd.isInGraph(output)) {
                outputs.add(output);
                gradients.add(gradient);
            }
        }
        if (outputs.size() == 1) {
            Autograd.backward(outputs.get(0), gradients.get(0));
        } else if (!outputs.isEmpty()) {
            NDArray surrogate =
                    Autograd.withGradMode(
                            true,
                            () -> {
                                NDArray sum = null;
                                for (int j = 0; j < outputs.size(); j++) {
                                    NDArray term =
                                            Precision.FLOAT32.cast(
                                                    outputs.get(j).mul(gradients.get(j)).sum());
                                    sum = sum == null ? term : sum.add(term);
                                }
                                return sum;
                            });
            Autograd.backward(surrogate, surrogate.onesLike());
        }
    }

    /**
     * Starts reducing the gradients left on {@code leaves} over the ranks, in the reduce type.
     *
     * @return the reduction in flight; {@code scope} must stay open until it completes
     */
    PendingReduction startReduction(List<GradientLeaves> leaves, float scale, NDManager scope) {
        return collectives.startReduction(unit, leaves, reduceType, scale, scope);
    }

    /** Gives back the unit's gathered memory (see {@link FsdpUnit#reshard}). */
    void reshard() {
        unit.reshard();
    }

    /**
     * Keeps a synchronized BatchNorm's call with the unit's call that runs now with a graph;
     * returns false when none does.
     */
    boolean recordNorm(NormCall norm) {
        if (recordingNorms == null) {
            return false;
        }
        recordingNorms.add(norm);
        return true;
    }

    /**
     * Materializes the unit's parameters in {@code scope}, seeds the generator when a seed is
     * given, and runs the unit's block with grad mode set to {@code withGraph}.
     */
    private UnitGraph run(
            ParameterStore parameterStore,
            NDList inputLeaves,
            NDManager scope,
            boolean withGraph,
            Long seed,
            boolean training,
            PairList<String, Object> params) {
        List<GradientLeaves> flatLeaves = unit.materialize(withGraph, computeType, scope);
        List<NormCall> norms = new ArrayList<>();
        recordingNorms = withGraph ? norms : null;
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
            recordingNorms = null;
            unit.clearViews();
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
}
