package ai.djl.fsdp.statedict;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * PyTorch-style dotted names for a DJL Block tree: {@code transformer.h.0.attn.c_attn.weight}.
 *
 * <p>DJL keys each child as {@code "%02d" + name} ({@code 01transformer}) and joins levels with
 * {@code "_"}, which is ambiguous for names that contain underscores ({@code c_attn}). This class
 * is the one place that turns a tree into unambiguous dotted names: it walks the children in order,
 * strips the position prefix DJL added, and joins with dots. A block built with the child names a
 * PyTorch module uses therefore gets exactly that module's {@code state_dict} keys, which is what
 * Hugging Face checkpoints, PEFT adapters and the FSDP checkpoints are keyed by.
 */
public final class StateDict {

    private StateDict() {}

    /**
     * Returns every block of a tree by its dotted path; the root is {@code ""}.
     *
     * @param root the root block
     * @return the blocks in pre-order
     */
    public static Map<String, Block> modules(Block root) {
        Map<String, Block> modules = new LinkedHashMap<>();
        walk(root, "", (path, block) -> modules.put(path, block));
        return Collections.unmodifiableMap(modules);
    }

    /**
     * Returns every parameter of a tree by its dotted name. A parameter reachable under several
     * names (tied weights, such as a language-model head sharing the token embedding) appears once,
     * under the first name in tree order, as PyTorch's {@code named_parameters()} does.
     *
     * @param root the root block
     * @return the parameters in tree order
     */
    public static Map<String, Parameter> parameters(Block root) {
        Map<String, Parameter> named = new LinkedHashMap<>();
        Map<Parameter, String> seen = new IdentityHashMap<>();
        forEachParameter(
                root,
                (name, parameter) -> {
                    if (seen.putIfAbsent(parameter, name) == null) {
                        named.put(name, parameter);
                    }
                });
        return Collections.unmodifiableMap(named);
    }

    /**
     * Returns the names under which a tied parameter appears again, each mapped to the name {@link
     * #parameters(Block)} lists it under ({@code lm_head.weight -> transformer.wte.weight}).
     *
     * @param root the root block
     * @return the aliases; empty if no parameter is shared
     */
    public static Map<String, String> aliases(Block root) {
        Map<String, String> aliases = new LinkedHashMap<>();
        Map<Parameter, String> seen = new IdentityHashMap<>();
        forEachParameter(
                root,
                (name, parameter) -> {
                    String first = seen.putIfAbsent(parameter, name);
                    if (first != null) {
                        aliases.put(name, first);
                    }
                });
        return Collections.unmodifiableMap(aliases);
    }

    /**
     * Returns a child's own name: its DJL key without the position prefix {@code addChildBlock}
     * adds.
     *
     * @param key the key in the parent's {@link Block#getChildren()}
     * @param position the child's zero-based position among its siblings
     * @return the name the child was added under
     */
    public static String childName(String key, int position) {
        String prefix = String.format(Locale.ROOT, "%02d", position + 1);
        if (!key.startsWith(prefix)) {
            throw new IllegalStateException(
                    "child key \""
                            + key
                            + "\" lacks the position prefix "
                            + prefix
                            + "; was it added with addChildBlock?");
        }
        return key.substring(prefix.length());
    }

    /**
     * Returns the names of a block's children, in order: each child's own name ({@link
     * #childName}); or, for a {@code SequentialBlock} (which names its children by class) and for
     * any block two of whose children share a name, every child's position, as PyTorch's {@code
     * nn.Sequential} names them.
     *
     * @param parent the block
     * @return one unique name per child
     */
    public static List<String> childNames(Block parent) {
        List<String> names = new ArrayList<>();
        int position = 0;
        for (Pair<String, Block> child : parent.getChildren()) {
            names.add(childName(child.getKey(), position++));
        }
        if (!(parent instanceof SequentialBlock) && new HashSet<>(names).size() == names.size()) {
            return names;
        }
        List<String> positions = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            positions.add(Integer.toString(i));
        }
        return positions;
    }

    /**
     * Joins a dotted path and a name below it.
     *
     * @param path a dotted path, {@code ""} for the root
     * @param name a child's or parameter's name
     * @return the dotted name
     */
    public static String join(String path, String name) {
        return path.isEmpty() ? name : path + '.' + name;
    }

    /**
     * Copies a value into a parameter's existing array, in place, so every holder of the array (a
     * tied head, an optimizer, a parameter store, a flat buffer it is a view of) sees it.
     *
     * <p>The copy goes through a detached alias of the array: the write is legal even for a leaf
     * that requires a gradient, and the array keeps its own native storage. (DJL's {@code
     * NDArray.set(Buffer)} would instead swap in Java-owned memory, which breaks views and outlives
     * nothing that still points at it.)
     *
     * @param name the parameter's dotted name, for the error message
     * @param parameter the initialized parameter
     * @param value the value; cast to the parameter's type if needed
     * @throws IllegalArgumentException if the shapes differ
     */
    public static void copyInto(String name, Parameter parameter, NDArray value) {
        NDArray target = parameter.getArray();
        if (!target.getShape().equals(value.getShape())) {
            throw new IllegalArgumentException(
                    "shape mismatch for "
                            + name
                            + ": the model has "
                            + target.getShape()
                            + ", the checkpoint "
                            + value.getShape());
        }
        NDArray cast =
                value.toType(target.getDataType(), false).toDevice(target.getDevice(), false);
        try (NDArray alias = target.stopGradient()) {
            alias.set(new NDIndex("..."), cast);
        } finally {
            if (cast != value) {
                cast.close();
            }
        }
    }

    /**
     * Adds a value to a parameter's array in place (see {@link #copyInto} for why through an
     * alias).
     *
     * @param parameter the initialized parameter
     * @param delta a value of the parameter's shape
     */
    public static void addInto(Parameter parameter, NDArray delta) {
        try (NDArray alias = parameter.getArray().stopGradient()) {
            alias.addi(delta);
        }
    }

    private static void forEachParameter(Block root, BiConsumer<String, Parameter> action) {
        walk(
                root,
                "",
                (path, block) -> {
                    for (Pair<String, Parameter> p : block.getDirectParameters()) {
                        action.accept(join(path, p.getValue().getName()), p.getValue());
                    }
                });
    }

    private static void walk(Block block, String path, BiConsumer<String, Block> visit) {
        visit.accept(path, block);
        List<String> names = childNames(block);
        int position = 0;
        for (Pair<String, Block> child : block.getChildren()) {
            walk(child.getValue(), join(path, names.get(position++)), visit);
        }
    }
}
