package ai.djl.fsdp.spark;

import ai.djl.fsdp.cli.Fsdp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Runs FSDP training as a Spark barrier stage, one task per rank, as PySpark's {@code
 * TorchDistributor} runs PyTorch's: every rank starts together, each is placed in the job from the
 * stage (see {@link SparkRank}), and a rank that fails fails the stage with its rank and message.
 *
 * <pre>{@code
 * FsdpDistributor distributor = FsdpDistributor.builder(spark).setRanks(4).build();
 * List<Float> losses = distributor.run(rank -> MyTraining.train(rank)); // in the executors' JVMs
 * distributor.run(dataFrame, (rank, rows) -> MyTraining.train(rank, rows)); // on its rows
 * distributor.runMain("finetune", "--model_name_or_path", "gpt2", ...); // a JVM per rank
 * }</pre>
 *
 * <p>The stage is followed by a shuffle, so that Spark retries it as a whole when a task fails (up
 * to {@code spark.stage.maxConsecutiveAttempts}, default 4): every rank starts again, as a new run
 * of the job, and a training that resumes from its last checkpoint continues from there. A barrier
 * stage needs all its tasks running at once: asking for more ranks than the cluster has task slots
 * fails at once, naming both.
 */
public final class FsdpDistributor {

    /** The job property that has Spark interrupt a killed task's thread. */
    private static final String INTERRUPT_ON_CANCEL = "spark.job.interruptOnCancel";

    /** The job property that names the job in Spark's UI. */
    private static final String JOB_DESCRIPTION = "spark.job.description";

    private final JavaSparkContext spark;
    private final int ranks;
    private final Duration timeout;
    private final List<String> javaOptions;
    private final Duration slotWait;

    private FsdpDistributor(Builder builder) {
        this.spark = builder.spark;
        this.ranks = builder.ranks;
        this.timeout = builder.timeout;
        this.javaOptions = List.copyOf(builder.javaOptions);
        this.slotWait = builder.slotWait;
    }

    /**
     * Returns a builder for a distributor on {@code session}'s cluster.
     *
     * @param session the Spark session
     * @return the builder
     */
    public static Builder builder(SparkSession session) {
        return builder(JavaSparkContext.fromSparkContext(session.sparkContext()));
    }

    /**
     * Returns a builder for a distributor on {@code context}'s cluster.
     *
     * @param context the Spark context
     * @return the builder
     */
    public static Builder builder(JavaSparkContext context) {
        return new Builder(context);
    }

    /** Returns the number of ranks, one barrier task each. */
    public int getRanks() {
        return ranks;
    }

    /**
     * Trains with {@code function} on every rank, in the executors' JVMs (one rank per executor).
     *
     * @param function the rank's training
     * @param <T> the type of a rank's result
     * @return each rank's result, by rank
     * @throws org.apache.spark.SparkException (undeclared) if the stage failed in its last attempt:
     *     its message names the failed rank and its message
     * @throws IllegalArgumentException at once, before the stage, if the configuration would put
     *     several ranks in one executor (a {@code local} master, or executors with the cores for
     *     several tasks) or the cluster cannot run every rank at once
     * @throws IllegalStateException if interrupted while it waits for executors (see {@link
     *     Builder#optSlotWait}): the thread stays interrupted
     */
    public <T> List<T> run(RankFunction<T> function) {
        OwnExecutors.requireOnDriver(spark.getConf(), ranks);
        JavaRDD<Object> tasks = emptyPartitions();
        return runStage(
                tasks,
                new BarrierTask<>((rank, rows) -> function.apply(rank), timeout, true, null));
    }

    /**
     * Trains with {@code function} on every rank on its share of {@code data}, in the executors'
     * JVMs (one rank per executor): a DataFrame trains without being written out first. The rows
     * are dealt to the ranks by position (row {@code i} to rank {@code i % ranks}, in order), so
     * the ranks' shares differ by at most one row.
     *
     * <p>The ranks must still agree on their number of steps: a rank that runs a step more than the
     * others waits in a collective until the timeout, and every retry of the stage fails the same
     * way. Train a fixed number of steps, or as many as the smallest share gives (it holds the row
     * count divided by the ranks, rounded down).
     *
     * @param data the training data
     * @param function the rank's training on its rows
     * @param <T> the type of a rank's result
     * @return each rank's result, by rank
     */
    public <T> List<T> run(Dataset<Row> data, PartitionFunction<Row, T> function) {
        return run(data.javaRDD(), function);
    }

    /**
     * Trains with {@code function} on every rank on its share of {@code data}, in the executors'
     * JVMs (one rank per executor); see {@link #run(Dataset, PartitionFunction)} for how the rows
     * are shared and the steps the ranks must agree on.
     *
     * @param data the training data
     * @param function the rank's training on its rows
     * @param <R> the type of the rows
     * @param <T> the type of a rank's result
     * @return each rank's result, by rank
     * @throws IllegalArgumentException at once, before the stage: see {@link #run(RankFunction)}
     */
    public <R, T> List<T> run(JavaRDD<R> data, PartitionFunction<R, T> function) {
        OwnExecutors.requireOnDriver(spark.getConf(), ranks);
        return runStage(
                RankShares.deal(data, ranks), new BarrierTask<>(function, timeout, true, null));
    }

    /**
     * Runs a program on every rank in a JVM of its own, as {@code bin/fsdp launch -- COMMAND} runs
     * it: a {@code bin/fsdp} command (a first word without a dot, such as {@code finetune}) or a
     * fully qualified main class, then its arguments. The classes come from the executors' class
     * path (the application jar and {@code --jars}).
     *
     * @param command the command or main class, then its arguments
     * @throws IllegalArgumentException if the command is empty or a jar
     */
    public void runMain(List<String> command) {
        JavaRDD<Object> tasks = emptyPartitions();
        ResumeFlag resume = ResumeFlag.of(mainCommand(command));
        RankProcess process = new RankProcess(resume, javaOptions);
        runStage(tasks, new BarrierTask<>(process, timeout, false, resume));
    }

    /**
     * Runs a program on every rank; see {@link #runMain(List)}.
     *
     * @param command the command or main class, then its arguments
     */
    public void runMain(String... command) {
        runMain(List.of(command));
    }

    /** One empty partition per rank, for the ranks that bring no data. */
    private JavaRDD<Object> emptyPartitions() {
        return spark.parallelize(new ArrayList<>(), ranks);
    }

    /** The main class and arguments a rank's JVM runs: a {@code bin/fsdp} command runs in Fsdp. */
    static List<String> mainCommand(List<String> command) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException(
                    "no command for the ranks: give a bin/fsdp command (finetune ...) or a main"
                            + " class, then its arguments");
        }
        String first = command.get(0);
        if (first.endsWith(".jar")) {
            throw new IllegalArgumentException(
                    first
                            + ": on Spark the ranks take their classes from the executors: give the"
                            + " jar to spark-submit (the application jar or --jars) and name its"
                            + " main class here");
        }
        if (first.contains(".")) {
            return List.copyOf(command);
        }
        List<String> cli = new ArrayList<>(command.size() + 1);
        cli.add(Fsdp.class.getName());
        cli.addAll(command);
        return cli;
    }

    @SuppressWarnings("unchecked")
    private <R, T> List<T> runStage(JavaRDD<R> partitions, BarrierTask<R, T> task) {
        requireSlots();
        SparkContext context = spark.sc();
        ClassTag<RankResult<T>> tag =
                (ClassTag<RankResult<T>>) (ClassTag<?>) ClassTag$.MODULE$.apply(RankResult.class);
        String interrupt = context.getLocalProperty(INTERRUPT_ON_CANCEL);
        String description = context.getLocalProperty(JOB_DESCRIPTION);
        context.setInterruptOnCancel(true);
        context.setJobDescription("djl-fsdp: " + ranks + " ranks");
        try {
            JavaRDD<RankResult<T>> results =
                    partitions.rdd().barrier().mapPartitions(task, false, tag).toJavaRDD();
            // The shuffle makes the barrier stage a map stage, which Spark retries as a whole.
            return results.repartition(1).collect().stream()
                    .sorted(Comparator.comparingInt(RankResult::rank))
                    .map(RankResult::value)
                    .toList();
        } finally {
            context.setLocalProperty(INTERRUPT_ON_CANCEL, interrupt);
            context.setLocalProperty(JOB_DESCRIPTION, description);
        }
    }

    /**
     * Fails unless the cluster can run every rank at once, waiting a while for executors that are
     * still registering.
     *
     * @throws IllegalStateException if interrupted while it waits (the thread stays interrupted)
     */
    private void requireSlots() {
        SparkContext context = spark.sc();
        long deadline = System.nanoTime() + slotWait.toNanos();
        int slots;
        while ((slots = slots(context)) < ranks && System.nanoTime() < deadline) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                IllegalStateException interrupted =
                        new IllegalStateException(
                                "interrupted while waiting for the cluster to run "
                                        + ranks
                                        + " tasks at once (it could run "
                                        + slots
                                        + " so far): no stage was started");
                interrupted.addSuppressed(e);
                throw interrupted;
            }
        }
        if (slots < ranks) {
            throw new IllegalArgumentException(
                    ranks
                            + " ranks, but the cluster can run "
                            + slots
                            + " tasks at once (executors times spark.executor.cores /"
                            + " spark.task.cpus), and a barrier stage runs all its tasks together:"
                            + " ask for at most "
                            + slots
                            + " ranks, or give the application more executors or cores"
                            + " (--num-executors or --total-executor-cores)");
        }
    }

    /**
     * The tasks the cluster runs at once with the default resource profile: what Spark's own
     * barrier check counts (Scala-private API, public to Java), which otherwise retries for minutes
     * before it fails.
     */
    private static int slots(SparkContext context) {
        return context.maxNumConcurrentTasks(
                context.resourceProfileManager().defaultResourceProfile());
    }

    /** Configures a {@link FsdpDistributor}; {@link #setRanks} is required. */
    public static final class Builder {

        private final JavaSparkContext spark;
        private int ranks;
        private Duration timeout;
        private List<String> javaOptions = List.of();
        private Duration slotWait = Duration.ofSeconds(30);

        private Builder(JavaSparkContext spark) {
            this.spark = Objects.requireNonNull(spark, "spark");
        }

        /**
         * Sets the number of ranks, one barrier task each.
         *
         * @param ranks at least 1, at most the tasks the cluster runs at once
         * @return this builder
         */
        public Builder setRanks(int ranks) {
            this.ranks = ranks;
            return this;
        }

        /**
         * Sets how long a rank may show no sign of life before every rank fails (the process
         * group's timeout, {@code DJL_FSDP_TIMEOUT}; default 60 seconds).
         *
         * @param timeout a positive duration
         * @return this builder
         */
        public Builder optTimeout(Duration timeout) {
            this.timeout = timeout;
            return this;
        }

        /**
         * Sets JVM options for the ranks {@link #runMain} starts, such as {@code -Xmx8g}.
         *
         * @param javaOptions the options
         * @return this builder
         */
        public Builder optJavaOptions(List<String> javaOptions) {
            this.javaOptions = List.copyOf(javaOptions);
            return this;
        }

        /**
         * Sets how long a run waits for executors to register before it fails for want of task
         * slots (default 30 seconds).
         *
         * @param slotWait the longest wait, zero or more
         * @return this builder
         */
        public Builder optSlotWait(Duration slotWait) {
            this.slotWait = slotWait;
            return this;
        }

        /**
         * Builds the distributor.
         *
         * @return the distributor
         * @throws IllegalArgumentException if the ranks or the timeout are not positive, or the
         *     slot wait is null or negative
         */
        public FsdpDistributor build() {
            if (ranks <= 0) {
                throw new IllegalArgumentException(
                        "ranks=" + ranks + ": set the number of ranks to at least 1 (setRanks)");
            }
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw new IllegalArgumentException("the timeout must be positive, got " + timeout);
            }
            if (slotWait == null || slotWait.isNegative()) {
                throw new IllegalArgumentException(
                        "the slot wait must be zero or more (optSlotWait), got " + slotWait);
            }
            return new FsdpDistributor(this);
        }
    }
}
