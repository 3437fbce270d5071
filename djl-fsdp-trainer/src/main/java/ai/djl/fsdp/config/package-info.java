/**
 * The settings the runtime follows, resolved from the trainer's {@code FsdpConfig}: {@link
 * ai.djl.fsdp.config.ExecutionOptions}, FSDP2's {@code fully_shard} arguments (resharding after
 * forward, prefetch, the compute and reduce types). It sits below both the trainer and the runtime,
 * so the runtime never reads the public API's types and the API package can hold them all.
 */
package ai.djl.fsdp.config;
