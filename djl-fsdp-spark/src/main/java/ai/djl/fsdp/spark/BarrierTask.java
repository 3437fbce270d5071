package ai.djl.fsdp.spark;

import ai.djl.fsdp.dist.CollectiveException;
import java.io.Serializable;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
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

    /**
     * How long a rank whose failure blames another rank waits for that rank's task to fail the
     * stage first: about as long as a rank takes to close its process group after an error.
     */
    static final Duration BLAMED_RANK_GRACE = Duration.ofSeconds(10);

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
            deferToBlamedRank(context, rank.getEnv().getRank(), e);
            throw new RankTaskFailedException(rank, e);
        }
        RankResult<T> result = new RankResult<>(rank.getEnv().getRank(), value);
        return CollectionConverters.asScala(List.of(result).iterator());
    }

    /**
     * When {@code failure} blames another rank (one that died, closed its links or stopped
     * answering), waits up to {@link #BLAMED_RANK_GRACE} for the stage to fail, as that rank's task
     * will: Spark reports the first failed task of a barrier stage, and the rank that failed first
     * is the one to name, with its own message, not the rank that noticed. Spark kills this task
     * once the stage has failed; a blamed rank that never reports (stopped, hung) leaves this
     * rank's failure to be reported when the grace is over.
     */
    private static void deferToBlamedRank(BarrierTaskContext context, int rank, Throwable failure) {
        OptionalInt blamed = CollectiveException.failedRankOf(failure);
        if (blamed.isEmpty() || blamed.getAsInt() == rank) {
            return;
        }
        long deadline = System.nanoTime() + BLAMED_RANK_GRACE.toNanos();
        while (!context.isInterrupted() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
