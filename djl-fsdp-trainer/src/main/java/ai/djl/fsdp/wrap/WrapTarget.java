package ai.djl.fsdp.wrap;

import ai.djl.nn.Block;

/**
 * A block chosen to become a unit, with where it sits in the model.
 *
 * @param path the block's dotted path in the model ({@code transformer.h.0}), as {@link
 *     ai.djl.fsdp.statedict.StateDict} names it
 * @param parent the block that holds it as a child
 * @param block the block itself
 */
public record WrapTarget(String path, Block parent, Block block) {}
