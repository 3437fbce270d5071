package ai.djl.fsdp.internal.runtime;

import ai.djl.ndarray.NDList;
import ai.djl.util.PairList;

/**
 * One call of a unit in a training forward, as the tape keeps it for backward.
 *
 * <p>{@code inputs} are the arrays the parent passed, still attached to the parent's graph; {@code
 * outputLeaves} are the fresh leaves handed back, on which the rest of the model's backward leaves
 * the output gradients. The unit's own graph is kept from forward (no activation checkpointing) or
 * rebuilt by recompute in backward, with the same seed so dropout draws the same masks.
 *
 * @param unit the unit called
 * @param inputs the parent's arrays
 * @param params the call's extra parameters
 * @param seed the generator seed the call ran with
 * @param outputLeaves the leaves handed to the parent
 * @param graph the graph kept from forward, or null when it is recomputed in backward or has none
 * @param needsBackward whether a gradient can reach the call: the unit trains or an input is in the
 *     parent's graph; a call that needs none is not kept for backward
 */
record UnitCall(
        UnitLifecycle unit,
        NDList inputs,
        PairList<String, Object> params,
        long seed,
        NDList outputLeaves,
        UnitGraph graph,
        boolean needsBackward)
        implements TapeEntry {}
