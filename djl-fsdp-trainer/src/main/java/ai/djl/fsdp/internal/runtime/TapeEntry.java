package ai.djl.fsdp.internal.runtime;

/**
 * What the backward tape walks in reverse: a unit's call, or a synchronized BatchNorm's call in the
 * root, whose backward needs the ranks' gradient sums before the gradient can go on.
 */
sealed interface TapeEntry permits UnitCall, NormCall {}
