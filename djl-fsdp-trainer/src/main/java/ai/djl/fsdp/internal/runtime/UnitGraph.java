package ai.djl.fsdp.internal.runtime;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import java.util.List;

/**
 * The autograd graph of one unit call, from detached input leaves through the unit's parameters to
 * its outputs, and the manager that owns it.
 *
 * @param scope owns the graph's arrays; closing it frees the unit's activations
 * @param inputLeaves the detached copies of the call's inputs the graph starts from
 * @param outputs the unit's outputs, attached to the graph
 * @param flatLeaves the trainable flat buffers' parameter leaves (null for frozen ones)
 * @param norms the synchronized BatchNorm calls inside the unit, in call order
 */
record UnitGraph(
        NDManager scope,
        NDList inputLeaves,
        NDList outputs,
        List<GradientLeaves> flatLeaves,
        List<NormCall> norms) {}
