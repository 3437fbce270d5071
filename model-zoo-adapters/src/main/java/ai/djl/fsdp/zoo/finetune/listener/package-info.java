/**
 * The {@code finetune} recipe's DJL {@link ai.djl.training.listener.TrainingListener}s: the step
 * log ({@link ai.djl.fsdp.zoo.finetune.listener.StepLogger}), the evaluation on the eval split
 * ({@link ai.djl.fsdp.zoo.finetune.listener.EvaluationListener}) and the progress bar ({@link
 * ai.djl.fsdp.zoo.finetune.listener.ProgressListener}); with the trainer's {@link
 * ai.djl.fsdp.trainer.CheckpointListener} and the user's {@code --listeners} they hear the events
 * the training loop raises, and read each step's figures from the trainer's metrics ({@link
 * ai.djl.fsdp.zoo.finetune.listener.StepMetrics}).
 */
package ai.djl.fsdp.zoo.finetune.listener;
