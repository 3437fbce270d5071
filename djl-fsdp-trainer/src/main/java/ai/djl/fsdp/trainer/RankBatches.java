package ai.djl.fsdp.trainer;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.training.dataset.Batch;
import ai.djl.translate.Batchifier;
import java.util.Iterator;
import java.util.List;

/**
 * Each rank's part of the global batches a dataset yields: rank {@code r} of {@code N} takes the
 * {@code r}-th of {@code N} equal slices along the batch axis, so the ranks together train on
 * exactly the global batch (and the mean of their losses is its loss).
 */
final class RankBatches implements Iterable<Batch> {

    private final Iterable<Batch> batches;
    private final int rank;
    private final int worldSize;

    RankBatches(Iterable<Batch> batches, int rank, int worldSize) {
        this.batches = batches;
        this.rank = rank;
        this.worldSize = worldSize;
    }

    @Override
    public Iterator<Batch> iterator() {
        Iterator<Batch> global = batches.iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return global.hasNext();
            }

            @Override
            public Batch next() {
                return slice(global.next());
            }
        };
    }

    private Batch slice(Batch batch) {
        int size = batch.getSize();
        if (size % worldSize != 0) {
            throw new IllegalArgumentException(
                    "A global batch of "
                            + size
                            + " cannot be split evenly over "
                            + worldSize
                            + " ranks: choose a batch size that is a multiple of the world size"
                            + " (and drop the last partial batch).");
        }
        int local = size / worldSize;
        int start = rank * local;
        List<?> indices = batch.getIndices();
        return new Batch(
                batch.getManager(),
                slice(batch.getData(), start, local),
                slice(batch.getLabels(), start, local),
                local,
                Batchifier.STACK,
                Batchifier.STACK,
                batch.getProgress(),
                batch.getProgressTotal(),
                indices == null || indices.size() != size
                        ? indices
                        : indices.subList(start, start + local));
    }

    private static NDList slice(NDList arrays, int start, int length) {
        NDList slices = new NDList(arrays.size());
        for (NDArray array : arrays) {
            slices.add(array.get(new NDIndex("{}:{}", start, start + length)));
        }
        return slices;
    }
}
