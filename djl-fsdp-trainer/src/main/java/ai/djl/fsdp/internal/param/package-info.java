/**
 * Flat parameters: a unit's parameters laid end to end in one padded buffer, of which each rank
 * keeps one shard. One buffer per unit (and per trainable/frozen kind) makes a unit's gather and
 * gradient reduction a single collective each.
 *
 * <p>Internal to the trainer module: no other module reaches it (the house test holds this), so it
 * changes without notice; programs use {@code ai.djl.fsdp.trainer}.
 */
package ai.djl.fsdp.internal.param;
