package ai.djl.fsdp.internal.runtime;

import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The unit calls of a training forward (and the root's synchronized BatchNorm calls, {@link
 * NormCall}), walked in reverse in backward. Reverse call order is a topological order, so each
 * call's output gradients are complete when it is reached: the call's unit ({@link UnitLifecycle})
 * runs its backward from them and starts its gradient reduction, which then runs while the input
 * gradients travel on through the parent's graph and the previous call is recomputed.
 *
 * <p>An input that is itself an earlier call's output leaf (one transformer block feeding the next)
 * has no graph of the parent's to travel through: its gradient is handed to that call here, added
 * to what the parent's backward left on the leaf, without a backward call into libtorch.
 */
final class BackwardTape {

    private final Collectives collectives;
    private final boolean prefetch;
    private final List<TapeEntry> calls = new ArrayList<>();
    // The output leaves of the recorded calls, and the gradients handed to them by later calls.
    private final Set<NDArray> outputLeaves = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Map<NDArray, NDArray> handed = new IdentityHashMap<>();
    private PendingReduction inFlight;

    BackwardTape(Collectives collectives, boolean prefetch) {
        this.collectives = collectives;
        this.prefetch = prefetch;
    }

    void record(TapeEntry call) {
        calls.add(call);
        if (call instanceof UnitCall unitCall) {
            outputLeaves.addAll(unitCall.outputLeaves());
        }
    }

    /**
     * Runs backward through every recorded call, the last first.
     *
     * @param parameterStore the store blocks read parameters from, for a recompute
     * @param scale the factor for this micro-batch's gradients
     */
    void run(ParameterStore parameterStore, float scale) {
        for (int i = calls.size() - 1; i >= 0; i--) {
            TapeEntry entry = calls.remove(i);
            if (entry instanceof NormCall norm) {
                norm.backward(collectives);
                continue;
            }
            UnitCall call = (UnitCall) entry;
            if (prefetch) {
                startGatherBefore(i);
            }
            backwardThrough(call, call.unit().graphForBackward(call, parameterStore), scale);
        }
    }

    /** Starts gathering the unit of the last call before entry {@code index}, if any. */
    private void startGatherBefore(int index) {
        for (int i = index - 1; i >= 0; i--) {
            if (calls.get(i) instanceof UnitCall previous) {
                previous.unit().startGather();
                return;
            }
        }
    }

    /**
     * Runs the unit's backward from its outputs' gradients, hands its inputs' gradients on, frees
     * the unit's graph and gathered parameters (as FSDP2 reshards after a unit's backward), and
     * leaves its gradient reduction in flight (completing the one before it).
     */
    private void backwardThrough(UnitCall call, UnitGraph graph, float scale) {
        PendingReduction reduction;
        // Closed as soon as the inputs' gradients are handed on: the unit's activations and the
        // views that keep a recomputed unit's gathered buffers alive go before the next unit runs,
        // not once its backward completes this reduction (which owns the gradients it reads).
        try (NDManager scope = graph.scope()) {
            List<NDArray> outputGradients = new ArrayList<>(call.outputLeaves().size());
            for (NDArray leaf : call.outputLeaves()) {
                outputGradients.add(outputGradient(leaf));
            }
            reduction = call.unit().backward(graph, outputGradients, scale);
            for (int j = 0; j < call.inputs().size(); j++) {
                NDArray leaf = graph.inputLeaves().get(j);
                NDArray gradient = Autograd.gradientOf(leaf);
                if (gradient != null) {
                    handOn(call.inputs().get(j), gradient, scope);
                }
            }
        } finally {
            // Released memory is gathered again into the same addresses; freed buffers are not,
            // and an earlier call's kept graph reads them.
            if (call.unit().unit().isHeldByGraph() || !keepsGraph(call.unit())) {
                call.unit().reshard();
            }
        }
        completeInFlight();
        inFlight = reduction;
    }

    /**
     * Returns whether an earlier call of {@code unit} (a unit called several times a pass) still on
     * the tape kept its graph from forward, which reads the unit's gathered buffers.
     */
    private boolean keepsGraph(UnitLifecycle unit) {
        for (TapeEntry entry : calls) {
            if (entry instanceof UnitCall earlier
                    && earlier.unit() == unit
                    && earlier.graph() != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Passes an input's gradient on: to the earlier call whose output leaf the input is, else into
     * the parent's graph.
     */
    private void handOn(NDArray input, NDArray gradient, NDManager scope) {
        if (outputLeaves.contains(input)) {
            // Kept as long as the leaf: the producer may come after other calls' scopes close.
            gradient.attach(input.getManager());
            NDArray earlier = handed.get(input);
            if (earlier == null) {
                handed.put(input, gradient);
            } else {
                // Summed in the order handed; the parent's share is added last (outputGradient).
                handed.put(input, earlier.add(gradient));
                earlier.close();
                gradient.close();
            }
        } else {
            gradient.attach(scope);
            Autograd.pushInto(input, gradient);
        }
    }

    /**
     * The gradient of a call's output leaf: what the parent's backward left on it plus what later
     * calls handed to it, or null if none reached it.
     */
    private NDArray outputGradient(NDArray leaf) {
        NDArray left = Autograd.gradientOf(leaf);
        NDArray given = handed.remove(leaf);
        if (left == null || given == null) {
            return left == null ? given : left;
        }
        NDArray sum = left.add(given);
        left.close();
        given.close();
        return sum;
    }

    /** Completes the gradient reduction in flight, if any, and frees what it reduced. */
    void completeInFlight() {
        PendingReduction reduction = inFlight;
        inFlight = null;
        if (reduction != null) {
            reduction.complete();
        }
    }

    /** Drops the calls not walked, freeing the graphs they kept, after the reduction in flight. */
    void clear() {
        completeInFlight();
        handed.values().forEach(NDArray::close);
        handed.clear();
        outputLeaves.clear();
        for (TapeEntry entry : calls) {
            if (entry instanceof UnitCall call && call.graph() != null) {
                call.graph().scope().close();
            }
        }
        calls.clear();
    }
}
