/**
 * The trainer's figures over all ranks: evaluators and the loss whose accumulators are updated with
 * the global batch gathered from every rank's slice ({@link
 * ai.djl.fsdp.trainer.metrics.GlobalBatch}, {@link ai.djl.fsdp.trainer.metrics.GlobalEvaluator},
 * {@link ai.djl.fsdp.trainer.metrics.GlobalLoss}), and the bytes and waits of each step's
 * collectives ({@link ai.djl.fsdp.trainer.metrics.MeteredProcessGroup}; the bytes by kind, {@link
 * ai.djl.fsdp.trainer.metrics.SentBytes}, are what {@code ShardingStats} hands a program).
 *
 * <p>Internal to the trainer: public only because {@code ai.djl.fsdp.trainer} uses them from
 * another package. A program reads these figures through {@code FsdpTrainer} and DJL's evaluators.
 */
package ai.djl.fsdp.trainer.metrics;
