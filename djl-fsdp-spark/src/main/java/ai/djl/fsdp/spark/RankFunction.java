package ai.djl.fsdp.spark;

import java.io.Serializable;

/**
 * A rank's training, run by {@link FsdpDistributor#run(RankFunction)} in a barrier task: Spark
 * serializes it to the executors, so what it captures must be serializable.
 *
 * @param <T> what the rank returns to the driver (serializable)
 */
@FunctionalInterface
public interface RankFunction<T> extends Serializable {

    /**
     * Trains as one rank of the job.
     *
     * @param rank the rank's place in the job and its device
     * @return the rank's result, handed back to the driver
     * @throws Exception if training fails: the stage fails with the rank and this message
     */
    T apply(SparkRank rank) throws Exception;
}
