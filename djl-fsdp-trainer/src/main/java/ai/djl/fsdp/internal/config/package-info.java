/**
 * The settings the runtime follows, resolved from the trainer's {@code FsdpConfig}: {@link
 * ai.djl.fsdp.internal.config.ExecutionOptions}, FSDP2's {@code fully_shard} arguments (resharding
 * after forward, prefetch, the compute and reduce types). It sits below both the trainer and the
 * runtime, so the runtime never reads the public API's types and the API package can hold them all.
 *
 * <p>Internal to the trainer module: no other module reaches it (the house test holds this), so it
 * changes without notice; programs use {@code ai.djl.fsdp.trainer}.
 */
package ai.djl.fsdp.internal.config;
