package ai.djl.fsdp.wrap;

import ai.djl.fsdp.statedict.StateDict;
import ai.djl.nn.Block;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Applies a wrap policy (the trainer's {@code WrapPolicy}) to a model's block tree: the first block
 * on each path that the policy accepts becomes a unit, and the walk does not descend into it.
 */
public final class WrapPlanner {

    private WrapPlanner() {}

    /**
     * Returns the blocks below {@code root} that become units, in the order a depth-first walk of
     * the children meets them (the usual order of their calls in forward).
     *
     * @param root the model's top block
     * @param policy whether a block becomes a unit; asked for blocks below {@code root} that are
     *     not inside a unit already
     * @return the units' blocks, never empty
     * @throws IllegalArgumentException if the policy accepts no block; the message lists the block
     *     classes the model contains
     */
    public static List<WrapTarget> plan(Block root, Predicate<Block> policy) {
        List<WrapTarget> targets = new ArrayList<>();
        collect(root, "", policy, targets);
        if (targets.isEmpty()) {
            throw new IllegalArgumentException(
                    "The wrap policy matches no block of the model, so there would be no FSDP unit."
                            + " The model contains these block classes: "
                            + String.join(", ", blockClasses(root))
                            + ". Name the repeated layer among them, e.g."
                            + " WrapPolicy.byLayerClass(\"GPT2Block\").");
        }
        return Collections.unmodifiableList(targets);
    }

    private static void collect(
            Block parent, String prefix, Predicate<Block> policy, List<WrapTarget> targets) {
        List<String> names = StateDict.childNames(parent);
        int position = 0;
        for (Pair<String, Block> child : parent.getChildren()) {
            String path = StateDict.join(prefix, names.get(position++));
            if (policy.test(child.getValue())) {
                targets.add(new WrapTarget(path, parent, child.getValue()));
            } else {
                collect(child.getValue(), path, policy, targets);
            }
        }
    }

    /**
     * Returns the simple class names of the blocks below {@code root} that hold parameters: the
     * names a {@code WrapPolicy.byLayerClass} policy can match.
     *
     * @param root the model's top block
     * @return the names, sorted
     */
    public static Set<String> blockClasses(Block root) {
        Set<String> names = new TreeSet<>();
        List<Block> pending = new ArrayList<>(root.getChildren().values());
        while (!pending.isEmpty()) {
            Block block = pending.remove(pending.size() - 1);
            if (!block.getParameters().isEmpty()) {
                names.add(block.getClass().getSimpleName());
            }
            pending.addAll(block.getChildren().values());
        }
        return names;
    }
}
