package ai.djl.fsdp.dist.quant;

import ai.djl.fsdp.dist.CollectiveArguments;
import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.dist.Work;
import ai.djl.fsdp.tensor.BlobTensors;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.fsdp.tensor.quant.QuantizedRows;
import ai.djl.fsdp.tensor.quant.SymmetricQuantizer;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/**
 * An all-gather, a reduce-scatter and an all-reduce whose values cross the wire quantized by one
 * {@link SymmetricQuantizer}: codes and scales travel as two collectives of the group, and the
 * values are restored (and, for the reductions, summed in float32) when the returned {@link Work}
 * is awaited, on the caller's thread and device.
 *
 * <p>The restored values are written straight into the output's memory (on the host by the
 * quantizer's own loop, elsewhere through a second tensor over that memory), so a graph that saved
 * views of the output (a unit's parameters, refilled before its backward) reads the new values
 * without autograd seeing an in-place change, as when a collective writes it. A reduction's rows
 * are summed as they are restored, a chunk at a time, with no float32 copy of them all. Every rank
 * restores every piece, its own included: all ranks compute with the same values.
 */
public final class QuantizedCollectives {

    private final SymmetricQuantizer quantizer;

    /**
     * Creates the collectives of {@code quantizer}'s codes.
     *
     * @param quantizer the codes' width and block size
     */
    public QuantizedCollectives(SymmetricQuantizer quantizer) {
        this.quantizer = quantizer;
    }

    /** Returns the quantizer. */
    public SymmetricQuantizer getQuantizer() {
        return quantizer;
    }

    /**
     * Gathers every rank's {@code input} into {@code output}, rank {@code r}'s values at offset
     * {@code r * input.size()}, quantized on the way.
     *
     * @param group the ranks
     * @param input this rank's values, floats
     * @param output where every rank's values land, in its own float type
     * @return the gather; {@code output} holds the values once it is awaited (NaN throughout a
     *     block that held a value that is not finite)
     */
    public Work allGatherAsync(ProcessGroup group, NDArray input, NDArray output) {
        CollectiveArguments.requireSizes(
                "allGather", group.getSize(), "output", output, "input", input);
        long columns = input.size();
        NDManager scope = output.getManager().newSubManager(output.getDevice());
        QuantizedRows own = quantizer.quantize(input, 1, scope);
        QuantizedRows all = quantizer.allocate(scope, group.getSize(), columns);
        List<Work> works =
                List.of(
                        group.allGatherAsync(own.codes(), all.codes()),
                        group.allGatherAsync(own.scales(), all.scales()));
        return new RestoringWork(works, scope, () -> quantizer.restore(all, columns, output));
    }

    /**
     * Reduces {@code input} across ranks and leaves piece {@code rank} of the result in {@code
     * output}: each rank's input is quantized once, piece {@code r} is sent to rank {@code r} in an
     * all-to-all, and the pieces that arrive are restored and summed in float32.
     *
     * @param group the ranks
     * @param input this rank's values, floats, {@code size} pieces of {@code output.size()}
     * @param output where this rank's piece of the sum (or mean) lands, in its own float type
     * @param op {@link ReduceOp#SUM} or {@link ReduceOp#AVG}
     * @return the reduction; {@code output} holds the result once it is awaited (NaN throughout a
     *     block that held a value that is not finite on any rank)
     * @throws IllegalArgumentException for another reduction
     */
    public Work reduceScatterAsync(ProcessGroup group, NDArray input, NDArray output, ReduceOp op) {
        return reduceScatterAsync(group, input, output, op, null);
    }

    /**
     * As {@link #reduceScatterAsync(ProcessGroup, NDArray, NDArray, ReduceOp)}, with error
     * feedback: {@code residual} (what quantizing took off this rank's last input) is added to
     * {@code input} before quantizing, and replaced by what quantizing takes off this sum. Over
     * reductions of a series of inputs the rounding then does not accumulate: the sums of what
     * arrive stay within one reduction's bound of the inputs' sums.
     *
     * @param group the ranks
     * @param input this rank's values, floats, {@code size} pieces of {@code output.size()}
     * @param output where this rank's piece of the sum (or mean) lands, in its own float type
     * @param op {@link ReduceOp#SUM} or {@link ReduceOp#AVG}
     * @param residual float32, {@code input}'s size, zeros at first and this rank's own; null for
     *     none
     * @return the reduction; {@code output} holds the result once it is awaited
     * @throws IllegalArgumentException for another reduction
     */
    public Work reduceScatterAsync(
            ProcessGroup group, NDArray input, NDArray output, ReduceOp op, NDArray residual) {
        CollectiveArguments.requireSizes(
                "reduceScatter", group.getSize(), "input", input, "output", output);
        if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new IllegalArgumentException("Unsupported reduction " + op);
        }
        int size = group.getSize();
        long columns = output.size();
        NDManager scope = output.getManager().newSubManager(output.getDevice());
        QuantizedRows mine = quantizer.quantize(input, size, residual, scope);
        QuantizedRows theirs = quantizer.allocate(scope, size, columns);
        List<Work> works =
                List.of(
                        group.allToAllAsync(mine.codes(), theirs.codes()),
                        group.allToAllAsync(mine.scales(), theirs.scales()));
        return new RestoringWork(
                works,
                scope,
                () -> quantizer.restoreSum(theirs, columns, op == ReduceOp.AVG ? size : 1, output));
    }

    /**
     * Reduces {@code array} across ranks in place, quantized both ways, once {@code after} is done:
     * a {@link #reduceScatterAsync quantized reduce-scatter} of its pieces (the last padded with
     * zeros) and an {@link #allGatherAsync all-gather} of the reduced pieces, quantized again. A
     * value comes back within its ranks' bounds summed (divided by the ranks for {@link
     * ReduceOp#AVG}) plus the bound of its reduced block; every rank restores the same values.
     *
     * <p>The collectives start on the thread that awaits the returned work, after {@code after}
     * (its input is read only then), so every rank must await such reductions of a group in the
     * same order, as it would start them.
     *
     * @param group the ranks
     * @param array this rank's values, floats; the result replaces them
     * @param op {@link ReduceOp#SUM} or {@link ReduceOp#AVG}
     * @param after the work that writes {@code array} first, or null
     * @return the reduction; {@code array} holds the result once it is awaited
     * @throws IllegalArgumentException for another reduction
     */
    public Work allReduceAsync(ProcessGroup group, NDArray array, ReduceOp op, Work after) {
        if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new IllegalArgumentException("Unsupported reduction " + op);
        }
        return new DeferredWork(after, () -> allReduce(group, array, op));
    }

    private void allReduce(ProcessGroup group, NDArray array, ReduceOp op) {
        int size = group.getSize();
        if (size == 1) {
            return;
        }
        long count = array.size();
        long piece = (count + size - 1) / size;
        try (NDManager scope = array.getManager().newSubManager(array.getDevice())) {
            array.tempAttach(scope);
            NDArray values = Precision.cast(array, DataType.FLOAT32).reshape(-1);
            if (piece * size != count) {
                values = values.concat(scope.zeros(new Shape(piece * size - count)));
            }
            NDArray reduced = scope.zeros(new Shape(piece));
            reduceScatterAsync(group, values, reduced, op).await();
            NDArray gathered = scope.zeros(new Shape(piece * size));
            allGatherAsync(group, reduced, gathered).await();
            BlobTensors.writeThrough(gathered.get("0:" + count), array, scope);
        }
    }

    /** The collectives of codes and scales, then the restoring of the values once awaited. */
    private static final class RestoringWork implements Work {

        private final List<Work> works;
        private final NDManager scope;
        private final Runnable restore;
        private volatile boolean done;

        RestoringWork(List<Work> works, NDManager scope, Runnable restore) {
            this.works = works;
            this.scope = scope;
            this.restore = restore;
        }

        /** Waits for both collectives (the buffers are freed only then), then restores. */
        @Override
        public synchronized void await() {
            if (done) {
                return;
            }
            RuntimeException failure = null;
            try {
                for (Work work : works) {
                    try {
                        work.await();
                    } catch (RuntimeException e) {
                        if (failure == null) {
                            failure = e;
                        } else {
                            failure.addSuppressed(e);
                        }
                    }
                }
                if (failure != null) {
                    throw failure;
                }
                restore.run();
                done = true;
            } finally {
                scope.close();
            }
        }

        @Override
        public boolean isDone() {
            return done;
        }
    }

    /** A reduction that starts once awaited, after the work that writes its input. */
    private static final class DeferredWork implements Work {

        private final Work after;
        private final Runnable reduction;
        private volatile boolean done;

        DeferredWork(Work after, Runnable reduction) {
            this.after = after;
            this.reduction = reduction;
        }

        @Override
        public synchronized void await() {
            if (done) {
                return;
            }
            if (after != null) {
                after.await();
            }
            reduction.run();
            done = true;
        }

        @Override
        public boolean isDone() {
            return done;
        }
    }
}
