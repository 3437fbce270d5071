/**
 * Flat parameters: a unit's parameters laid end to end in one padded buffer, of which each rank
 * keeps one shard. One buffer per unit (and per trainable/frozen kind) makes a unit's gather and
 * gradient reduction a single collective each.
 */
package ai.djl.fsdp.param;
