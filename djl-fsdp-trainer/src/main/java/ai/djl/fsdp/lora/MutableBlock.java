package ai.djl.fsdp.lora;

import ai.djl.nn.Block;

/**
 * A block whose children can be swapped after construction. DJL hands out only copies of a block's
 * child list, so inserting an adapter around a layer needs the parent's cooperation; model blocks
 * implement this and look their children up by name at each forward, so a replacement takes effect.
 */
public interface MutableBlock extends Block {

    /**
     * Replaces a direct child, keeping its name and position.
     *
     * @param name the child's name (without DJL's position prefix)
     * @param replacement the new child
     * @return the child that was replaced
     * @throws IllegalArgumentException if there is no child of that name
     */
    Block replaceChild(String name, Block replacement);
}
