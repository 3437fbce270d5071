package ai.djl.fsdp.spark;

import java.util.List;
import org.apache.spark.SparkConf;

/**
 * One rank per executor, for ranks that train in the executor's JVM (DJL's engine is per process).
 * What the configuration tells the driver fails before the stage is submitted, so that Spark does
 * not retry a stage that cannot succeed; which executors the tasks got, only the stage can tell,
 * and it fails every task alike.
 */
final class OwnExecutors {

    private static final String NEED =
            "but a rank that trains in the executor's JVM needs one of its own (DJL's engine is per"
                    + " process): ";

    private static final String RUN_MAIN = "or run a main class in a JVM per rank (runMain)";

    private static final String ONE_TASK_PER_EXECUTOR =
            "set spark.task.cpus to spark.executor.cores so that each executor runs one task at a"
                    + " time, "
                    + RUN_MAIN;

    private OwnExecutors() {}

    /**
     * Fails when the configuration puts several ranks in one executor: a {@code local} master (one
     * executor, the driver's), or executors with the cores for more than one task.
     *
     * @param conf the application's configuration
     * @param ranks the number of ranks
     * @throws IllegalArgumentException naming the settings and the fix
     */
    static void requireOnDriver(SparkConf conf, int ranks) {
        if (ranks < 2) {
            return;
        }
        String master = conf.get("spark.master", "");
        if (master.startsWith("local") && !master.startsWith("local-cluster")) {
            throw new IllegalArgumentException(
                    "ranks 0 and 1 would run in the same executor (the driver's: a "
                            + master
                            + " master has no other), "
                            + NEED
                            + "run on a cluster (local-cluster[N,cores,memory] on one machine), "
                            + RUN_MAIN);
        }
        if (conf.contains("spark.executor.cores")) {
            int executorCores = conf.getInt("spark.executor.cores", 1);
            int taskCpus = conf.getInt("spark.task.cpus", 1);
            if (executorCores / taskCpus > 1) {
                throw new IllegalArgumentException(
                        "spark.executor.cores="
                                + executorCores
                                + " and spark.task.cpus="
                                + taskCpus
                                + " would run "
                                + executorCores / taskCpus
                                + " ranks in one executor, "
                                + NEED
                                + ONE_TASK_PER_EXECUTOR);
            }
        }
    }

    /**
     * Fails when two ranks share an executor.
     *
     * @param executors each rank's executor id, by rank
     * @throws IllegalStateException naming the ranks, the executor and the fix
     */
    static void require(List<String> executors) {
        for (int later = 1; later < executors.size(); later++) {
            int earlier = executors.indexOf(executors.get(later));
            if (earlier < later) {
                throw new IllegalStateException(
                        "ranks "
                                + earlier
                                + " and "
                                + later
                                + " run in the same executor ("
                                + executors.get(later)
                                + "), "
                                + NEED
                                + ONE_TASK_PER_EXECUTOR);
            }
        }
    }
}
