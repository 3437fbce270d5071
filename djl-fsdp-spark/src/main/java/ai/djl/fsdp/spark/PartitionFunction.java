package ai.djl.fsdp.spark;

import java.io.Serializable;
import java.util.Iterator;

/**
 * A rank's training on its share of the data, run by {@link FsdpDistributor#run(
 * org.apache.spark.api.java.JavaRDD, PartitionFunction)} in a barrier task: Spark serializes it to
 * the executors, so what it captures must be serializable.
 *
 * <p>Every rank must run the same number of steps, whatever its rows: see {@link
 * FsdpDistributor#run(org.apache.spark.sql.Dataset, PartitionFunction)}.
 *
 * @param <R> the type of the data's rows
 * @param <T> what the rank returns to the driver (serializable)
 */
@FunctionalInterface
public interface PartitionFunction<R, T> extends Serializable {

    /**
     * Trains as one rank of the job on its rows.
     *
     * @param rank the rank's place in the job and its device
     * @param rows the rank's share of the rows, in their order, read once as they stream in
     * @return the rank's result, handed back to the driver
     * @throws Exception if training fails: the stage fails with the rank and this message
     */
    T apply(SparkRank rank, Iterator<R> rows) throws Exception;
}
