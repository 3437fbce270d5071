/**
 * {@code bin/fsdp finetune}: the command ({@link ai.djl.fsdp.zoo.finetune.FinetuneCommand}), the
 * run it builds from the flags ({@link ai.djl.fsdp.zoo.finetune.FinetuneRecipe}) and its training
 * loop, evaluation and learning-rate schedule. The flags are in {@code finetune.args}, the data in
 * {@code finetune.data}, the output directory in {@code finetune.output}, what the run reports in
 * {@code finetune.report}.
 */
package ai.djl.fsdp.zoo.finetune;
