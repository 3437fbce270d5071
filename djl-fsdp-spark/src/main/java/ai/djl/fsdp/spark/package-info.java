/**
 * FSDP ranks as a Spark barrier stage: {@link ai.djl.fsdp.spark.FsdpDistributor} runs one barrier
 * task per rank, places each rank in the job from the stage (its rank, the world size, the ranks
 * sharing its host, rank 0's host for the store, a port and job token agreed through the barrier),
 * and trains there: a function in the executor's JVM, on its share of a DataFrame's rows if given
 * one, or a main class (a {@code bin/fsdp} command such as {@code finetune}) in a JVM of its own
 * per task, as {@code bin/fsdp launch} starts it. {@link ai.djl.fsdp.spark.FsdpSparkSubmit} is the
 * {@code spark-submit} entry. See docs/launcher.md, "Spark".
 */
package ai.djl.fsdp.spark;
