package ai.djl.fsdp.runtime;

import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.op.Autograd;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The unit calls of a training forward (and the root's synchronized BatchNorm calls, {@link
 * NormCall}), walked in reverse in backward. Reverse call order is a topological order, so each
 * call's output gradients are complete when it is reached: a vector-Jacobian product through the
 * call's graph (kept, refilled by a gather if its parameters were released after forward, or
 * rebuilt by recompute) from its output gradients fills its flat gradients, whose reduction over
 * the ranks then runs while the input gradients travel on through the parent's graph and the
 * previous call is recomputed.
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
     * @param recompute rebuilds the graph of a call that kept none
     * @param scale the factor for this micro-batch's gradients
     */
    void run(Function<UnitCall, UnitGraph> recompute, float scale) {
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
            UnitGraph graph = call.graph();
            if (graph == null) {
                graph = recompute.apply(call);
            } else if (call.unit().isHeldByGraph()) {
                // Released after forward: refill the addresses the kept graph reads.
                collectives.gather(call.unit());
            }
            backwardThrough(call, graph, scale);
        }
    }

    /** Starts gathering the unit of the last call before entry {@code index}, if any. */
    private void startGatherBefore(int index) {
        for (int i = index - 1; i >= 0; i--) {
            if (calls.get(i) instanceof UnitCall previous) {
                collectives.startGather(previous.unit());
                return;
            }
        }
    }

    private void backwardThrough(UnitCall call, UnitGraph graph, float scale) {
        NDManager scope = graph.scope();
        try {
            backwardFromOutputs(call, graph);
            // Synchronized BatchNorm cut the unit's graph: the last first, each pushes its input's
            // gradient on towards the unit's inputs and the earlier ones.
            for (int k = graph.norms().size() - 1; k >= 0; k--) {
                graph.norms().get(k).backward(collectives);
            }
            PendingReduction reduction =
                    collectives.startReduction(call.unit(), graph.flatLeaves(), scale, scope);
            for (int j = 0; j < call.inputs().size(); j++) {
                NDArray leaf = graph.inputLeaves().get(j);
                NDArray gradient = Autograd.gradientOf(leaf);
                if (gradient != null) {
                    handOn(call.inputs().get(j), gradient, scope);
                }
            }
            completeInFlight();
            reduction.releaseWhenDone(scope);
            inFlight = reduction;
        } catch (RuntimeException e) {
            scope.close();
            throw e;
        } finally {
            call.unit().reshard();
        }
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

    /**
     * Runs the vector-Jacobian product from the unit's outputs with the gradients their leaves
     * received (from the parent's graph and from later calls, {@link #outputGradient}): straight
     * from the output when one received a gradient (a transformer block's case), else from {@code
     * sum(out * g)} over those that did, in float32 (DJL makes the ones that backward starts from
     * only of its own types): d/d(out) of it is g, so one backward serves all of them. Outputs
     * computed from nothing trainable (frozen parameters, a data input) have no graph to run.
     */
    private void backwardFromOutputs(UnitCall call, UnitGraph graph) {
        List<NDArray> outputs = new ArrayList<>(graph.outputs().size());
        List<NDArray> gradients = new ArrayList<>(graph.outputs().size());
        for (int j = 0; j < graph.outputs().size(); j++) {
            NDArray gradient = outputGradient(call.outputLeaves().get(j));
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
