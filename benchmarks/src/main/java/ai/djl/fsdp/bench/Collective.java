package ai.djl.fsdp.bench;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import java.util.Locale;
import java.util.Optional;

/**
 * The collectives the benchmarks time, each on float32 data whose results every rank can compute on
 * its own: rank {@code r}'s element {@code i} is {@code (r + 1) + i % 7}, so sums over ranks are
 * small integers and exact in float32.
 *
 * <p>The size is that of the larger buffer, as in nccl-tests: the gathered output of all-gather,
 * the input of reduce-scatter, the array of all-reduce. The bus bandwidth factor turns algorithm
 * bandwidth into the bandwidth each link carries under a ring algorithm, comparable across world
 * sizes.
 */
public enum Collective {
    /**
     * Every rank contributes {@code 1/N} of the elements and receives all of them, in place as FSDP
     * gathers (nccl-tests' in-place column): the input is this rank's piece of the output.
     */
    ALL_GATHER {
        @Override
        public Run prepare(ProcessGroup group, NDManager manager, long elements) {
            int worldSize = group.getSize();
            long shard = shardOf(elements, worldSize);
            NDArray output = manager.zeros(new Shape(elements));
            NDIndex own =
                    new NDIndex("{}:{}", group.getRank() * shard, (group.getRank() + 1) * shard);
            output.set(own, manager.create(rankValues(group.getRank(), 0, shard)));
            NDArray input = output.get(own);
            return new Run(() -> group.allGather(input, output), output) {
                @Override
                float expected(long index) {
                    return value((int) (index / shard), index % shard);
                }
            };
        }

        @Override
        double busFactor(int worldSize) {
            return (worldSize - 1) / (double) worldSize;
        }
    },

    /** Every rank contributes all elements and receives the sum of its {@code 1/N} of them. */
    REDUCE_SCATTER {
        @Override
        public Run prepare(ProcessGroup group, NDManager manager, long elements) {
            int worldSize = group.getSize();
            long shard = shardOf(elements, worldSize);
            NDArray input = manager.create(rankValues(group.getRank(), 0, elements));
            NDArray output = manager.zeros(new Shape(shard));
            long offset = group.getRank() * shard;
            return new Run(() -> group.reduceScatter(input, output, ReduceOp.SUM), output) {
                @Override
                float expected(long index) {
                    return sumOverRanks(worldSize, offset + index);
                }
            };
        }

        @Override
        double busFactor(int worldSize) {
            return (worldSize - 1) / (double) worldSize;
        }
    },

    /**
     * Every rank contributes all elements and receives their sum, in place. Repeated runs keep
     * summing, so only the first run's result is the expected one.
     */
    ALL_REDUCE {
        @Override
        public Run prepare(ProcessGroup group, NDManager manager, long elements) {
            int worldSize = group.getSize();
            NDArray array = manager.create(rankValues(group.getRank(), 0, elements));
            return new Run(() -> group.allReduce(array, ReduceOp.SUM), array) {
                @Override
                float expected(long index) {
                    return sumOverRanks(worldSize, index);
                }
            };
        }

        @Override
        double busFactor(int worldSize) {
            return 2 * (worldSize - 1) / (double) worldSize;
        }
    };

    /**
     * Allocates this rank's arrays for one collective over {@code elements} float32 elements (the
     * larger buffer).
     *
     * @param group the ranks
     * @param manager owns the arrays (and picks their device)
     * @param elements the larger buffer's element count, a multiple of the world size
     * @return the collective, ready to run
     */
    public abstract Run prepare(ProcessGroup group, NDManager manager, long elements);

    /** Returns the ratio of bus bandwidth to algorithm bandwidth for {@code worldSize} ranks. */
    abstract double busFactor(int worldSize);

    /**
     * Returns the name nccl-tests and PyTorch use, such as {@code all_gather}.
     *
     * @return the lower-case name
     */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Formats one measurement: {@code op=.. bytes=.. time_ms=.. algbw_GBps=.. busbw_GBps=..}, with
     * GB meaning 10^9 bytes as in nccl-tests.
     *
     * @param bytes the larger buffer's size
     * @param seconds the time of one collective
     * @param worldSize the number of ranks
     * @return the report line
     */
    public String report(long bytes, double seconds, int worldSize) {
        double algorithmBandwidth = bytes / seconds / 1e9;
        return String.format(
                Locale.ROOT,
                "op=%s bytes=%d time_ms=%.3f algbw_GBps=%.3f busbw_GBps=%.3f",
                label(),
                bytes,
                seconds * 1e3,
                algorithmBandwidth,
                algorithmBandwidth * busFactor(worldSize));
    }

    /**
     * Formats what one rank sends per collective on a hybrid layout, appended to {@link #report}:
     * {@code group=shard|replicate ranks=.. sent_inside_mb=.. sent_across_mb=..}. A ring sends the
     * bus bandwidth's bytes from every rank; a replicate group's ring links all join two shard
     * groups (its members are in different ones), a shard group's none.
     *
     * @param bytes the larger buffer's size
     * @param groupSize the ranks of the group it ran in
     * @param across whether it ran in a replicate group
     * @return the fields, with a leading space
     */
    public String hybridReport(long bytes, int groupSize, boolean across) {
        double sentMegabytes = bytes * busFactor(groupSize) / 1e6;
        return String.format(
                Locale.ROOT,
                " group=%s ranks=%d sent_inside_mb=%.3f sent_across_mb=%.3f",
                across ? "replicate" : "shard",
                groupSize,
                across ? 0 : sentMegabytes,
                across ? sentMegabytes : 0);
    }

    /**
     * Returns the collective with the given {@link #label}.
     *
     * @param label such as {@code all_reduce}
     * @return the collective
     */
    public static Collective ofLabel(String label) {
        return valueOf(label.toUpperCase(Locale.ROOT));
    }

    static float value(int rank, long index) {
        return (rank + 1) + index % 7;
    }

    static float sumOverRanks(int worldSize, long index) {
        return worldSize * (worldSize + 1) / 2f + worldSize * (index % 7);
    }

    private static float[] rankValues(int rank, long from, long count) {
        float[] values = new float[Math.toIntExact(count)];
        for (int i = 0; i < values.length; i++) {
            values[i] = value(rank, from + i);
        }
        return values;
    }

    private static long shardOf(long elements, int worldSize) {
        if (elements % worldSize != 0) {
            throw new IllegalArgumentException(
                    elements + " elements do not split evenly over " + worldSize + " ranks");
        }
        return elements / worldSize;
    }

    /** One rank's side of a prepared collective. */
    public abstract static class Run {

        private final Runnable collective;
        private final NDArray result;

        Run(Runnable collective, NDArray result) {
            this.collective = collective;
            this.result = result;
        }

        /** Runs the collective once and waits for it. */
        public void run() {
            collective.run();
        }

        /**
         * Compares this rank's result with the expected values.
         *
         * @return a description of the first mismatch, empty if every element matches
         */
        public Optional<String> mismatch() {
            float[] actual = result.toFloatArray();
            for (int i = 0; i < actual.length; i++) {
                float expected = expected(i);
                if (actual[i] != expected) {
                    return Optional.of(
                            "element " + i + " is " + actual[i] + ", expected " + expected);
                }
            }
            return Optional.empty();
        }

        abstract float expected(long index);
    }
}
