/**
 * The optimizer step on shards: the user's DJL optimizer applied to each rank's flat parameter
 * shards, with global-norm clipping, and the accounting of the state it keeps.
 */
package ai.djl.fsdp.optim;
