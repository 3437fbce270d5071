/**
 * The output directory of {@code finetune}: checked before the run, filled in a staging directory
 * and moved into place whole at the end, marked as the tool's own, and stale staging or previous
 * outputs of interrupted runs cleaned up.
 */
package ai.djl.fsdp.zoo.finetune.output;
