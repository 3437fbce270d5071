package ai.djl.fsdp.spark;

import org.apache.spark.Partitioner;
import org.apache.spark.api.java.JavaRDD;
import scala.Tuple2;

/**
 * Deals a data set's rows to the ranks by position: row {@code i} goes to rank {@code i % ranks},
 * and each rank keeps its rows in their order in the data set, so the ranks' shares differ by at
 * most one row whatever the data set's partitions (a {@code repartition} deals each input
 * partition's rows round-robin from a random start, and the shares can differ by as many rows as
 * there are input partitions).
 */
final class RankShares extends Partitioner {

    private static final long serialVersionUID = 1L;

    private final int ranks;

    private RankShares(int ranks) {
        this.ranks = ranks;
    }

    /**
     * Returns {@code data} in one partition per rank, partition {@code r} holding rows {@code r},
     * {@code r + ranks}, {@code r + 2 * ranks}... in that order.
     *
     * @param data the rows
     * @param ranks the number of ranks
     * @param <R> the type of the rows
     * @return the rows dealt to the ranks
     */
    static <R> JavaRDD<R> deal(JavaRDD<R> data, int ranks) {
        return data.zipWithIndex()
                .mapToPair(Tuple2::swap)
                .repartitionAndSortWithinPartitions(new RankShares(ranks))
                .values();
    }

    @Override
    public int numPartitions() {
        return ranks;
    }

    @Override
    public int getPartition(Object position) {
        return (int) ((Long) position % ranks);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof RankShares shares && shares.ranks == ranks;
    }

    @Override
    public int hashCode() {
        return ranks;
    }
}
