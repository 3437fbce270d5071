package ai.djl.fsdp.wrap;

import ai.djl.nn.Block;

/**
 * A block chosen to become a unit, with where it sits in the model.
 *
 * @param path the child names from the model's top block down to the block, joined by {@code _} as
 *     DJL joins parameter names
 * @param parent the block that holds it as a child
 * @param block the block itself
 */
public record WrapTarget(String path, Block parent, Block block) {}
