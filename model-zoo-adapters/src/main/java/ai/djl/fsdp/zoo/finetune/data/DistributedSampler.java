package ai.djl.fsdp.zoo.finetune.data;

import java.util.Arrays;
import java.util.Random;

/**
 * Which examples each rank reads, as PyTorch's {@code DistributedSampler}: every epoch is a
 * permutation of the dataset drawn from {@code seed + epoch} (the same on every rank), padded by
 * wrapping around to a multiple of the world size, and rank {@code r} reads positions {@code r, r +
 * world, ...}. So the ranks' parts are disjoint within the dataset's size, together complete, and
 * equally long: every rank makes the same number of batches. The wrapped-around positions are
 * padding, at the end of a rank's last batch ({@link #getPadding}): an evaluation leaves them out
 * of its figures so each example counts once. The position (epoch, batches read) is exposed so a
 * checkpoint can save it and a resumed run {@link #seek} to it.
 */
public final class DistributedSampler {

    private final int size;
    private final int rank;
    private final int worldSize;
    private final long seed;
    private final boolean shuffle;
    private final int batchSize;
    private int epoch;
    private int batchesRead;
    private int padding;
    private int[] order;

    /**
     * Creates a sampler at epoch 0.
     *
     * @param size the number of examples
     * @param rank this rank
     * @param worldSize the number of ranks
     * @param batchSize examples per rank and batch (the last batch of an epoch may be shorter)
     * @param shuffle whether each epoch is reshuffled (off: the examples in order)
     * @param seed the shuffle seed
     */
    public DistributedSampler(
            int size, int rank, int worldSize, int batchSize, boolean shuffle, long seed) {
        if (size <= 0 || batchSize <= 0 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException(
                    "sampler of " + size + " examples, batch " + batchSize + ", rank " + rank);
        }
        this.size = size;
        this.rank = rank;
        this.worldSize = worldSize;
        this.batchSize = batchSize;
        this.shuffle = shuffle;
        this.seed = seed;
        seek(0, 0);
    }

    /** Returns the examples each rank reads per epoch. */
    public int getSamplesPerRank() {
        return (size + worldSize - 1) / worldSize;
    }

    /** Returns the batches each rank reads per epoch. */
    public int getBatchesPerEpoch() {
        return (getSamplesPerRank() + batchSize - 1) / batchSize;
    }

    /** Returns the current epoch (from 0). */
    public int getEpoch() {
        return epoch;
    }

    /** Returns how many batches of the current epoch have been read. */
    public int getBatchesRead() {
        return batchesRead;
    }

    /**
     * Moves to a position, as saved from {@link #getEpoch} and {@link #getBatchesRead}.
     *
     * @param epoch the epoch
     * @param batchesRead the batches of it already read
     */
    public void seek(int epoch, int batchesRead) {
        if (batchesRead < 0 || batchesRead > getBatchesPerEpoch()) {
            throw new IllegalArgumentException(
                    "batch position " + batchesRead + " of " + getBatchesPerEpoch());
        }
        this.epoch = epoch;
        this.batchesRead = batchesRead;
        this.order = permutation(epoch);
    }

    /** Returns true while the current epoch has batches left. */
    public boolean hasNext() {
        return batchesRead < getBatchesPerEpoch();
    }

    /**
     * Returns this rank's next batch of example indices and advances; at the end of an epoch call
     * {@link #nextEpoch}.
     *
     * @return the indices
     */
    public int[] next() {
        if (!hasNext()) {
            throw new IllegalStateException("epoch " + epoch + " is read: call nextEpoch()");
        }
        int first = batchesRead * batchSize;
        int count = Math.min(batchSize, getSamplesPerRank() - first);
        int[] indices = new int[count];
        padding = 0;
        for (int i = 0; i < count; i++) {
            int position = (first + i) * worldSize + rank;
            indices[i] = order[position % size];
            padding += position >= size ? 1 : 0;
        }
        batchesRead++;
        return indices;
    }

    /**
     * Returns how many of the indices the last {@link #next} returned are padding: positions past
     * the dataset, wrapped around to its start so that every rank reads as many. They are the last
     * ones of the batch, and they repeat examples another rank reads; an evaluation runs them
     * (every rank makes the same passes) but leaves them out of its figures, as Hugging Face's
     * {@code gather_for_metrics} drops them, so that each example counts once.
     *
     * @return the number of padding indices at the end of the last batch, 0 before any
     */
    public int getPadding() {
        return padding;
    }

    /** Moves to the start of the next epoch. */
    public void nextEpoch() {
        seek(epoch + 1, 0);
    }

    private int[] permutation(int epoch) {
        int[] indices = new int[size];
        Arrays.setAll(indices, i -> i);
        if (shuffle) {
            Random random = new Random(seed * 1_000_003L + epoch);
            for (int i = size - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                int swap = indices[i];
                indices[i] = indices[j];
                indices[j] = swap;
            }
        }
        return indices;
    }
}
