package ai.djl.fsdp.wrap;

import ai.djl.nn.Block;
import java.util.List;

/**
 * A block chosen to become a unit, with where it sits in the model.
 *
 * @param path the block's dotted path in the model ({@code transformer.h.0}), as {@link
 *     ai.djl.fsdp.statedict.StateDict} names it; the first where it sits in several places
 * @param parents the blocks that hold it as a child, in the order the walk meets them: one, or
 *     several for a block the model shares between parents (as Hugging Face's T5 stacks hold the
 *     model's {@code shared} table as their {@code embed_tokens})
 * @param block the block itself
 */
public record WrapTarget(String path, List<Block> parents, Block block) {

    /** Copies {@code parents}. */
    public WrapTarget {
        parents = List.copyOf(parents);
    }
}
