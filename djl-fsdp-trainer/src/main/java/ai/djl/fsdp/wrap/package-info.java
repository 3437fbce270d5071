/**
 * Which blocks become FSDP units ({@link ai.djl.fsdp.wrap.WrapPolicy}, {@link
 * ai.djl.fsdp.wrap.WrapPlanner}) and how a unit is put in its parent's place ({@link
 * ai.djl.fsdp.wrap.ChildSwap}): DJL's {@code Block.forward} is final and has no hooks, so a wrapper
 * in the parent's child list and fields is the only way to run code around a block's call.
 */
package ai.djl.fsdp.wrap;
