package ai.djl.fsdp.unit;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.util.PairList;
import java.util.List;

/**
 * One call of a unit in a training forward, as the tape keeps it for backward.
 *
 * <p>{@code inputs} are the arrays the parent passed, still attached to the parent's graph; {@code
 * outputLeaves} are the fresh leaves handed back, on which the rest of the model's backward leaves
 * the output gradients. When the unit's graph was built in forward (no recompute) the call also
 * keeps that graph: its scope, the input leaves it started from, the outputs it ended in and the
 * flat parameters' leaves; with recompute those are null and rebuilt in backward.
 */
final class UnitCall {

    final FsdpUnit unit;
    final NDList inputs;
    final PairList<String, Object> params;
    final int seed;
    final NDList outputLeaves;

    NDManager scope;
    NDList inputLeaves;
    NDList outputs;
    List<NDArray> flatLeaves;

    UnitCall(
            FsdpUnit unit,
            NDList inputs,
            PairList<String, Object> params,
            int seed,
            NDList outputLeaves) {
        this.unit = unit;
        this.inputs = inputs;
        this.params = params;
        this.seed = seed;
        this.outputLeaves = outputLeaves;
    }
}
