/**
 * Accelerate's configuration (its YAML file and the variables its launcher sets) as the defaults of
 * {@code finetune}'s flags.
 */
package ai.djl.fsdp.zoo.finetune.config;
