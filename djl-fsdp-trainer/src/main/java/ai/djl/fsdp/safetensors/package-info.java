/**
 * The safetensors format and Hugging Face's checkpoint files, read and written without PyTorch:
 * {@link ai.djl.fsdp.safetensors.SafetensorsFile} reads one file (its header checked once, tensors
 * or a range of a tensor's elements memory-mapped on demand), {@link
 * ai.djl.fsdp.safetensors.SafetensorsCheckpoint} looks tensors up across a checkpoint's shards, and
 * {@link ai.djl.fsdp.safetensors.SafetensorsWriter} writes a file or a sharded directory ({@link
 * ai.djl.fsdp.safetensors.CheckpointShards}), whole or streamed. {@link
 * ai.djl.fsdp.safetensors.Dtype} maps the format's element types to DJL's, widening BF16, which DJL
 * cannot create.
 *
 * <p>Two helpers serve every file the project writes or parses: {@link
 * ai.djl.fsdp.safetensors.AtomicFiles} writes to a temporary sibling and renames, and {@link
 * ai.djl.fsdp.safetensors.JsonText} parses JSON (with Gson) and reports malformed input in the
 * user's terms. Depends only on the engine's tensor package; used by the checkpoint and LoRA
 * packages and by the model zoo's Hugging Face loading and saving.
 */
package ai.djl.fsdp.safetensors;
