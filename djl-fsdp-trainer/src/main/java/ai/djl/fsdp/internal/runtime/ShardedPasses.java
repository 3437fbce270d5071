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
 * The passes over a sharded model, as FSDP2's root state schedules them: the root's gather for the
 * whole pass, the order of the unit calls (each unit's own part is its {@link UnitLifecycle}'s),
 * prefetching the next unit's gather, the tape that backward walks, the generator seeds, and the
 * end of a step.
 *
 * <p>Forward prefetch follows the order the last completed pass (training or inference) called the
 * units in, call by call, as FSDP1 follows the execution order it records, while the pass keeps to
 * it. Until a pass has completed, and in a pass that leaves that order (a generation step that
 * calls only the decoder), the unit after the current one in model order is prefetched, on the
 * current unit's first call of the pass only: a unit called again (T5's token table, shared by the
 * encoder and the decoder) prefetches nothing, so no more than the computing and the next unit are
 * gathered. Where a pass leaves the order, the unit the order gathered ahead for that call, if the
 * pass has not called it, is resharded at once.
 *
 * <p>DJL exposes no autograd hooks, so a unit's call in a training forward runs on detached copies
 * of its inputs and hands its parent fresh leaves as outputs; the tape records each call. Backward
 * first runs from the loss through the root's graph, which leaves gradients on the output leaves
 * and the root's parameters, then walks the tape.
 */
public final class ShardedPasses {

    private final Collectives collectives;
    private final ExecutionOptions options;
    private final UnitLifecycle root;
    private final List<UnitLifecycle> units;
    private final RecomputeSeeds seeds;
    private final BackwardTape tape;
    private final ModelBuffers buffers;
    private final GatheredPeak peak;

    private Phase phase = Phase.IDLE;

    /** The units in the order the last completed pass called them, a unit once per call. */
    private List<UnitLifecycle> learnedOrder = List.of();

    /** The units this pass has called so far, in call order. */
    private List<UnitLifecycle> calls = new ArrayList<>();

    /** Whether this pass has called the units in {@link #learnedOrder} so far. */
    private boolean onLearnedOrder;

    /** Whether the last training forward's backward has run. */
    private boolean backwardRan;

    private NDManager rootScope;
    private List<GradientLeaves> rootLeaves = List.of();

    /**
     * Schedules the passes over {@code units}.
     *
     * @param collectives the ranks' collectives
     * @param options how passes are scheduled
     * @param units the units, the root first
     * @param buffers the model's buffers
     */
    ShardedPasses(
            Collectives collectives,
            ExecutionOptions options,
            List<FsdpUnit> units,
            ModelBuffers buffers) {
        this.collectives = collectives;
        this.options = options;
        this.buffers = buffers;
        peak = new GatheredPeak(units);
        List<UnitLifecycle> lifecycles = new ArrayList<>(units.size());
        for (FsdpUnit unit : units) {
            lifecycles.add(new UnitLifecycle(unit, collectives, options, buffers, peak));
        }
        root = lifecycles.get(0);
        this.units = List.copyOf(lifecycles.subList(1, lifecycles.size()));
        seeds = new RecomputeSeeds(collectives.getGroup().getRank());
        tape = new BackwardTape(collectives, options.prefetch());
    }

    /** Returns the units' lifecycles, the root excluded, in model order. */
    List<UnitLifecycle> getUnits() {
        return units;
    }

    /**
     * Prepares a forward pass: gathers the root's parameters, which stay gathered until the pass
     * (and, when {@code training}, its backward) is over, and starts gathering the first unit.
     *
     * @param training whether backward follows: the units' calls are then recorded
     * @param manager the manager the root's views are made under
     */
    public void beginForward(boolean training, NDManager manager) {
        if (phase != Phase.IDLE) {
            // A training forward that was never followed by backward.
            discardPass();
        }
        phase = training ? Phase.RECORDING : Phase.INFERENCE;
        backwardRan = false;
        root.startGather();
        onLearnedOrder = !learnedOrder.isEmpty();
        List<UnitLifecycle> order = onLearnedOrder ? learnedOrder : units;
        if (options.prefetch() && !order.isEmpty()) {
            order.get(0).startGather();
        }
        if (training) {
            // The root's randomness (embedding dropout) is a function of the step too, so a
            // resumed run draws what the uninterrupted one drew.
            TorchRandom.seed(seeds.of(root.unit(), -1));
        }
        rootScope = manager.newSubManager();
        rootScope.setName("fsdp-root");
        rootLeaves = root.materializeRoot(training, rootScope);
    }

    /** Runs one call of {@code unit} within the current pass. */
    NDList call(
            UnitLifecycle unit,
            ParameterStore parameterStore,
            NDList inputs,
            boolean training,
            PairList<String, Object> params) {
        boolean recording = phase == Phase.RECORDING;
        unit.startGather();
        int callIndex = calls.size();
        UnitLifecycle next = nextCallAfter(unit, callIndex);
        calls.add(unit);
        if (options.prefetch() && next != null) {
            next.startGather();
        }
        UnitCall call =
                unit.forward(
                        parameterStore,
                        inputs,
                        recording,
                        training,
                        params,
                        seeds.of(unit.unit(), callIndex));
        if (call.needsBackward()) {
            tape.record(call);
        }
        return call.outputLeaves();
    }

    /**
     * Returns the unit whose gather to start during call {@code callIndex} of the pass, a call of
     * {@code unit}, or null: the next call of the learned order while the pass keeps to it, else
     * the unit after {@code unit} in model order if this is its first call of the pass. Where the
     * pass leaves the learned order, the unit it gathered ahead for this call is resharded unless
     * the pass has called it (its graph may read it).
     */
    private UnitLifecycle nextCallAfter(UnitLifecycle unit, int callIndex) {
        if (onLearnedOrder) {
            UnitLifecycle expected =
                    callIndex < learnedOrder.size() ? learnedOrder.get(callIndex) : null;
            if (expected == unit) {
                return callIndex + 1 < learnedOrder.size() ? learnedOrder.get(callIndex + 1) : null;
            }
            onLearnedOrder = false;
            if (expected != null && options.prefetch() && !calls.contains(expected)) {
                expected.reshard();
            }
        }
        if (calls.contains(unit)) {
            return null;
        }
        int position = units.indexOf(unit);
        return position + 1 < units.size() ? units.get(position + 1) : null;
    }

    /** Ends a forward pass: buffers updated in a narrower type take the updates. */
    public void endForward() {
        buffers.endForward();
    }

    /**
     * Ends a forward pass that has no backward: the order of its calls is the one the next pass
     * prefetches in, and the root's and the units' gathers are freed.
     */
    public void endInference() {
        learnedOrder = List.copyOf(calls);
        discardPass();
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
        if (phase != Phase.RECORDING && backwardRan) {
            throw new IllegalStateException(
                    "backward already ran for this forward: FSDP runs one backward per forward"
                            + " (its graphs and gathered parameters are freed by then). Sum the"
                            + " losses first and call backward once on the sum.");
        }
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
        tape.run(parameterStore, scale);
        PendingReduction rootReduction = root.startReduction(rootLeaves, scale, rootScope);
        tape.completeInFlight();
        rootReduction.complete();
        learnedOrder = List.copyOf(calls);
        discardPass();
        backwardRan = true;
        seeds.endMicroBatch();
    }

    /**
     * Returns the largest bytes of gathered (full) parameter buffers this rank has held at once
     * during its passes so far, prefetched ones included; 0 when no buffer needs a gather.
     */
    public long getPeakGatheredBytes() {
        return peak.getBytes();
    }

    /**
     * Ends an optimizer step: counts it for the generator seeds and averages the buffers over the
     * ranks (a collective).
     */
    public void endStep() {
        seeds.endStep();
        buffers.average(collectives.getGroup());
    }

    /**
     * Sets how many optimizer steps were taken (a resumed run), for the generator seeds.
     *
     * @param step the optimizer steps taken
     */
    public void setStep(long step) {
        seeds.setStep(step);
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
        // Units do not nest: at most one runs with a graph now.
        for (UnitLifecycle unit : units) {
            if (unit.recordNorm(norm)) {
                return;
            }
        }
        tape.record(norm);
    }

    /** Drops a pass's state: recorded calls, views and gathers; every unit is resharded. */
    void discardPass() {
        tape.clear();
        calls = new ArrayList<>();
        onLearnedOrder = false;
        phase = Phase.IDLE;
        if (rootScope != null) {
            rootScope.close();
            rootScope = null;
        }
        rootLeaves = List.of();
        root.reshard();
        // The graphs are closed: released buffers can be unmapped.
        units.forEach(unit -> unit.unit().free());
    }
}
