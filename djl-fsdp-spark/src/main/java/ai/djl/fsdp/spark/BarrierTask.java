package ai.djl.fsdp.spark;

import java.io.Serializable;
import java.time.Duration;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The body of one barrier task: places the task in the job ({@link BarrierRendezvous}), runs the
 * rank's function on its partition's rows and returns its result tagged with the rank. A function
 * that throws fails the task, and with it the stage, with a message that names the rank.
 *
 * @param <R> the type of the rows
 * @param <T> the type of the result
 */
final class BarrierTask<R, T> extends AbstractFunction1<Iterator<R>, Iterator<RankResult<T>>>
        implements Serializable {

    private static final long serialVersionUID = 1L;

    private final PartitionFunction<R, T> function;
    private final Duration timeout;
    private final boolean ownExecutor;
    private final ResumeFlag resume;

    /**
     * Creates the task body.
     *
     * @param function the rank's training
     * @param timeout the process group timeout, or null for its default
     * @param ownExecutor whether the function trains in the executor's JVM (one rank per executor)
     * @param resume the command whose checkpoint rank 0 chooses for every rank, or null for none
     */
    BarrierTask(
            PartitionFunction<R, T> function,
            Duration timeout,
            boolean ownExecutor,
            ResumeFlag resume) {
        this.function = function;
        this.timeout = timeout;
        this.ownExecutor = ownExecutor;
        this.resume = resume;
    }

    @Override
    public Iterator<RankResult<T>> apply(Iterator<R> rows) {
        BarrierTaskContext context = BarrierTaskContext.get();
        SparkRank rank = BarrierRendezvous.join(context, timeout, ownExecutor, resume);
        T value;
        try {
            value = function.apply(rank, CollectionConverters.asJava(rows));
        } catch (Exception e) {
            throw new RankFailedException(rank, e);
        }
        RankResult<T> result = new RankResult<>(rank.getEnv().getRank(), value);
        return CollectionConverters.asScala(List.of(result).iterator());
    }
}
