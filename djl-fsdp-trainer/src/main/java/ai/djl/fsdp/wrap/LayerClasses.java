package ai.djl.fsdp.wrap;

import ai.djl.nn.Block;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Block classes as a policy names them, by simple name ({@code GPT2Block}) or fully qualified name:
 * the trainer's {@code WrapPolicy.byLayerClass} and {@code ActivationCheckpointing.byLayerClass}. A
 * name that matches no block is a mistake (a misspelling) each refuses, naming it and the classes
 * there are.
 */
public final class LayerClasses {

    /**
     * A wrap policy that wraps the blocks of its layer classes and nothing else: it depends on no
     * parameter's shape, and {@link WrapPlanner#plan} refuses a name of it that matches no block of
     * the model.
     */
    public interface Policy {

        /** Returns the classes whose blocks the policy wraps. */
        LayerClasses layerClasses();
    }

    private final Set<String> names;

    private LayerClasses(Set<String> names) {
        this.names = names;
    }

    /**
     * Returns the classes of these names.
     *
     * @param names simple or fully qualified class names, in the order messages list them
     * @return the classes
     */
    public static LayerClasses of(Collection<String> names) {
        return new LayerClasses(Collections.unmodifiableSet(new LinkedHashSet<>(names)));
    }

    /** Returns the names, in the order given, each once. */
    public Set<String> names() {
        return names;
    }

    /**
     * Returns whether {@code block}'s class has one of the names, simple or fully qualified.
     *
     * @param block the block
     * @return whether it is of one of the classes
     */
    public boolean matches(Block block) {
        return names.contains(block.getClass().getSimpleName())
                || names.contains(block.getClass().getName());
    }

    /**
     * Returns the names that match none of {@code blocks}, in the order given.
     *
     * @param blocks the blocks
     * @return the names of no block's class
     */
    public List<String> unmatched(Collection<Block> blocks) {
        List<String> unmatched = new ArrayList<>();
        for (String name : names) {
            LayerClasses one = new LayerClasses(Set.of(name));
            if (blocks.stream().noneMatch(one::matches)) {
                unmatched.add(name);
            }
        }
        return unmatched;
    }
}
