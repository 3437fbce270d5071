package ai.djl.fsdp.zoo.finetune.data;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;

/**
 * A batch of {@link TrainingData}: what the model is called with and the token labels {@code [B,
 * T]} of its logits {@code [B, T, vocab]}, {@code -100} where nothing is trained.
 *
 * @param modelInputs the model's inputs, the input ids first
 * @param labels the labels
 */
public record LabeledBatch(NDList modelInputs, NDArray labels) {}
