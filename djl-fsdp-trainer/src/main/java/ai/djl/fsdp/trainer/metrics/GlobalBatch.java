package ai.djl.fsdp.trainer.metrics;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The global batch's labels and predictions, put together from every rank's slice (an all-gather
 * along the batch axis), for the evaluators: the first evaluator that updates with a rank's slice
 * gathers, the others reuse it. The ranks' slices are of equal size ({@code RankBatches}) and every
 * rank's listeners update the same evaluators in the same order, as DJL's {@code
 * EvaluatorTrainingListener} does.
 */
public final class GlobalBatch {

    /** The element types the collectives move; others travel as float32. */
    private static final Set<DataType> MOVED =
            Set.of(DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.INT64);

    private final Supplier<ProcessGroup> group;
    private NDList localLabels;
    private NDList localPredictions;
    private NDList labels;
    private NDList predictions;

    /**
     * Creates the gatherer.
     *
     * @param group the trainer's process group, looked up when a batch is gathered
     */
    public GlobalBatch(Supplier<ProcessGroup> group) {
        this.group = group;
    }

    /** Returns the global batch's labels for this rank's slice of them. */
    NDList labels(NDList sliceLabels, NDList slicePredictions) {
        gather(sliceLabels, slicePredictions);
        return labels;
    }

    /** Returns the global batch's predictions for this rank's slice of them. */
    NDList predictions(NDList sliceLabels, NDList slicePredictions) {
        gather(sliceLabels, slicePredictions);
        return predictions;
    }

    private void gather(NDList sliceLabels, NDList slicePredictions) {
        if (sliceLabels == localLabels && slicePredictions == localPredictions) {
            return;
        }
        ProcessGroup ranks = group.get();
        labels = gather(ranks, sliceLabels);
        predictions = gather(ranks, slicePredictions);
        localLabels = sliceLabels;
        localPredictions = slicePredictions;
    }

    private static NDList gather(ProcessGroup ranks, NDList slices) {
        if (ranks.getSize() == 1) {
            return slices;
        }
        NDList global = new NDList(slices.size());
        for (NDArray slice : slices) {
            global.add(gather(ranks, slice));
        }
        return global;
    }

    /** Gathers one array; the result lives as long as the slice's manager (the batch's). */
    private static NDArray gather(ProcessGroup ranks, NDArray slice) {
        NDManager manager = slice.getManager();
        DataType type = slice.getDataType();
        boolean moved = MOVED.contains(type);
        // A contiguous copy on the group's device (bfloat16 reads UNKNOWN and stays float32).
        NDArray input =
                moved
                        ? slice.toDevice(ranks.getDevice(), true)
                        : slice.toType(DataType.FLOAT32, true).toDevice(ranks.getDevice(), false);
        Shape shape = slice.getShape();
        long[] dims = shape.getShape().clone();
        dims[0] *= ranks.getSize();
        NDArray output = manager.zeros(new Shape(dims), input.getDataType(), ranks.getDevice());
        ranks.allGather(input, output);
        input.close();
        NDArray result = output.toDevice(slice.getDevice(), false);
        if (!moved && type != DataType.UNKNOWN) {
            result = result.toType(type, false);
        }
        if (result != output) {
            output.close();
        }
        return result;
    }
}
