package ai.djl.fsdp.reflect;

import ai.djl.nn.AbstractBaseBlock;
import ai.djl.nn.AbstractBlock;
import ai.djl.nn.Block;
import ai.djl.nn.BlockList;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

/**
 * Replaces a child block by another in every place its parent holds it, and puts it back: the one
 * way the project changes a block tree, both to put an FSDP unit's stand-in in its block's place
 * and to put a LoRA adapter around a projection.
 *
 * <p>Why reflection: DJL's {@code Block.forward} is final and has no hooks, and a block hands out
 * only a copy of its child list. A parent reaches a child through DJL's child list (how {@code
 * SequentialBlock} and the zoo's blocks run) or through its own fields (how hand-written blocks
 * do), a field holding the block, a list of blocks or an array of blocks; all of those are
 * rewritten.
 */
public final class BlockChildren {

    private final List<Runnable> restores;

    private BlockChildren(List<Runnable> restores) {
        this.restores = restores;
    }

    /**
     * Puts {@code replacement} wherever {@code parent} holds {@code child}.
     *
     * @param parent the parent block
     * @param child the child it holds
     * @param replacement what it holds instead from now on
     * @return the swap, to undo with {@link #restore()}
     * @throws IllegalStateException if a field of the parent is declared with a type the
     *     replacement does not have
     */
    public static BlockChildren replace(Block parent, Block child, Block replacement) {
        List<Runnable> restores = new ArrayList<>();
        try {
            if (parent instanceof AbstractBlock) {
                Field childrenField = AbstractBlock.class.getDeclaredField("children");
                childrenField.setAccessible(true);
                // getChildren() returns a copy; the parent runs children from this list.
                BlockList children = (BlockList) childrenField.get(parent);
                swapInList(children.values(), child, replacement, restores);
            }
            for (Class<?> type = parent.getClass();
                    type != null && type != AbstractBlock.class && type != AbstractBaseBlock.class;
                    type = type.getSuperclass()) {
                for (Field field : type.getDeclaredFields()) {
                    if (!Modifier.isStatic(field.getModifiers())) {
                        swapInField(parent, field, child, replacement, restores);
                    }
                }
            }
        } catch (ReflectiveOperationException e) {
            new BlockChildren(restores).restore();
            throw new IllegalStateException("Cannot replace a child of " + parent.getClass(), e);
        } catch (RuntimeException e) {
            // Leave the parent as it was: no half-wrapped model.
            new BlockChildren(restores).restore();
            throw e;
        }
        return new BlockChildren(restores);
    }

    /**
     * Puts {@code replacement} wherever any of {@code parents} holds {@code child}: for a block the
     * model shares between parents.
     *
     * @param parents the parent blocks
     * @param child the child they hold
     * @param replacement what they hold instead from now on
     * @return the swaps, to undo with {@link #restore()}
     * @throws IllegalStateException as {@link #replace(Block, Block, Block)}; no parent is left
     *     changed
     */
    public static BlockChildren replace(List<Block> parents, Block child, Block replacement) {
        List<Runnable> restores = new ArrayList<>();
        try {
            for (Block parent : parents) {
                restores.add(replace(parent, child, replacement)::restore);
            }
        } catch (RuntimeException e) {
            new BlockChildren(restores).restore();
            throw e;
        }
        return new BlockChildren(restores);
    }

    /** Puts the original child back everywhere it was replaced. */
    public void restore() {
        for (int i = restores.size() - 1; i >= 0; i--) {
            restores.get(i).run();
        }
        restores.clear();
    }

    private static void swapInField(
            Block parent, Field field, Block child, Block replacement, List<Runnable> restores)
            throws IllegalAccessException {
        if (field.getType().isPrimitive()) {
            return;
        }
        field.setAccessible(true);
        Object value = field.get(parent);
        if (value == child) {
            if (!field.getType().isInstance(replacement)
                    || Modifier.isFinal(field.getModifiers())) {
                throw new IllegalStateException(
                        "Cannot make "
                                + child.getClass().getSimpleName()
                                + " an FSDP unit: its parent "
                                + parent.getClass().getName()
                                + " holds it in field '"
                                + field.getName()
                                + "' declared as "
                                + field.getType().getSimpleName()
                                + (Modifier.isFinal(field.getModifiers()) ? " final" : "")
                                + ". Declare the field as a non-final Block (or AbstractBlock).");
            }
            field.set(parent, replacement);
            restores.add(() -> setField(field, parent, child));
        } else if (value instanceof List) {
            swapInList((List<?>) value, child, replacement, restores);
        } else if (value != null
                && value.getClass().isArray()
                && value.getClass().getComponentType().isInstance(replacement)) {
            for (int i = 0; i < Array.getLength(value); i++) {
                if (Array.get(value, i) == child) {
                    int index = i;
                    Array.set(value, index, replacement);
                    restores.add(() -> Array.set(value, index, child));
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static void swapInList(
            List<?> list, Block child, Block replacement, List<Runnable> restores) {
        List<Object> elements = (List<Object>) list;
        for (int i = 0; i < elements.size(); i++) {
            if (elements.get(i) == child) {
                int index = i;
                try {
                    elements.set(index, replacement);
                } catch (UnsupportedOperationException e) {
                    throw new IllegalStateException(
                            "Cannot make "
                                    + child.getClass().getSimpleName()
                                    + " an FSDP unit: its parent holds it in an unmodifiable list."
                                    + " Keep child blocks in a modifiable list (e.g. ArrayList).",
                            e);
                }
                restores.add(() -> elements.set(index, child));
            }
        }
    }

    private static void setField(Field field, Object owner, Object value) {
        try {
            field.set(owner, value);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("Cannot restore field " + field, e);
        }
    }
}
