package ai.djl.fsdp.wrap;

import ai.djl.fsdp.statedict.StateDict;
import ai.djl.nn.Block;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
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
     * @throws IllegalArgumentException if the policy accepts no block, or names a layer class (see
     *     {@link LayerClasses.Policy}) that matches no block; the message lists the block classes
     *     the model contains
     */
    public static List<WrapTarget> plan(Block root, Predicate<Block> policy) {
        if (policy instanceof LayerClasses.Policy named) {
            List<String> unmatched = unmatchedClasses(root, named.layerClasses());
            if (!unmatched.isEmpty()) {
                throw new IllegalArgumentException(
                        "The wrap policy's layer "
                                + (unmatched.size() == 1 ? "class " : "classes ")
                                + String.join(", ", unmatched)
                                + (unmatched.size() == 1 ? " matches" : " match")
                                + " no block of the model (misspelled?). The model contains these"
                                + " block classes: "
                                + String.join(", ", blockClasses(root))
                                + ". Name only classes among them (simple or fully qualified"
                                + " names).");
            }
        }
        List<WrapTarget> targets = targets(root, policy);
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

    /**
     * Returns whether {@code policy} accepts any block below {@code root} as {@link #plan} asks it:
     * whether the model has units under it as it is now.
     *
     * @param root the model's top block
     * @param policy whether a block becomes a unit
     * @return whether it chooses a unit
     */
    public static boolean choosesAny(Block root, Predicate<Block> policy) {
        return !targets(root, policy).isEmpty();
    }

    /**
     * Returns the names of {@code classes} that match no block below {@code root} holding
     * parameters (a unit of none would shard nothing), in their order: the blocks {@link
     * #blockClasses} names.
     *
     * @param root the model's top block
     * @param classes the layer classes
     * @return the names that match no such block
     */
    public static List<String> unmatchedClasses(Block root, LayerClasses classes) {
        List<Block> holding = new ArrayList<>();
        for (Block block : blocksBelow(root)) {
            if (!block.getParameters().isEmpty()) {
                holding.add(block);
            }
        }
        return classes.unmatched(holding);
    }

    private static List<WrapTarget> targets(Block root, Predicate<Block> policy) {
        List<WrapTarget> targets = new ArrayList<>();
        collect(root, "", policy, new IdentityHashMap<>(), targets);
        return targets;
    }

    /**
     * Walks the children of {@code parent}. A unit's block met again under another parent (a block
     * the model shares, not a copy) stays one unit, with that parent added to the places its
     * stand-in takes; a shared block that is not a unit is walked once. {@code seen} maps each
     * block met to its target's index, -1 for a block walked into.
     */
    private static void collect(
            Block parent,
            String prefix,
            Predicate<Block> policy,
            Map<Block, Integer> seen,
            List<WrapTarget> targets) {
        List<String> names = StateDict.childNames(parent);
        int position = 0;
        for (Pair<String, Block> child : parent.getChildren()) {
            String path = StateDict.join(prefix, names.get(position++));
            Block block = child.getValue();
            Integer earlier = seen.get(block);
            if (earlier != null && earlier >= 0) {
                WrapTarget target = targets.get(earlier);
                if (!target.parents().contains(parent)) {
                    List<Block> parents = new ArrayList<>(target.parents());
                    parents.add(parent);
                    targets.set(earlier, new WrapTarget(target.path(), parents, block));
                }
            } else if (earlier == null && policy.test(block)) {
                seen.put(block, targets.size());
                targets.add(new WrapTarget(path, List.of(parent), block));
            } else if (earlier == null) {
                seen.put(block, -1);
                collect(block, path, policy, seen, targets);
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
        for (Block block : blocksBelow(root)) {
            if (!block.getParameters().isEmpty()) {
                names.add(block.getClass().getSimpleName());
            }
        }
        return names;
    }

    /** Returns every block below {@code root}, a block held in several places once. */
    private static Set<Block> blocksBelow(Block root) {
        Set<Block> blocks = Collections.newSetFromMap(new IdentityHashMap<>());
        List<Block> pending = new ArrayList<>(root.getChildren().values());
        while (!pending.isEmpty()) {
            Block block = pending.remove(pending.size() - 1);
            if (blocks.add(block)) {
                pending.addAll(block.getChildren().values());
            }
        }
        return blocks;
    }
}
