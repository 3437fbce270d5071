/**
 * FSDP units and the execution of a step over them ({@link ai.djl.fsdp.unit.ShardedModel}).
 *
 * <p>DJL offers no autograd hooks or custom autograd functions, so PyTorch FSDP's way of freeing
 * parameters after forward and gathering them again from a backward hook is not available. Units
 * are activation-checkpoint boundaries instead: each call runs on detached inputs and returns fresh
 * leaves, a tape records the calls, and backward walks the tape in reverse with vector-Jacobian
 * products ({@code JniUtils.backward}), recomputing each unit when its graph was not kept.
 */
package ai.djl.fsdp.unit;
