package ai.djl.fsdp.trainer;

import ai.djl.fsdp.wrap.LayerClasses;
import ai.djl.nn.Block;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which FSDP units are recomputed in backward (activation checkpointing), independent of how
 * parameters are sharded, as torchtitan applies {@code full}, every k-th layer or none from
 * outside. A recomputed unit runs forward without a graph, keeps only its inputs, and runs again
 * with a graph in backward: activation memory traded for a second forward. Any other unit keeps its
 * graph, and so its activations, from forward to backward. The root unit (what no unit holds) is
 * never recomputed.
 *
 * <pre>{@code
 * ActivationCheckpointing.everyUnit()              // full
 * ActivationCheckpointing.everyNthUnit(2)          // the 2nd, 4th, ... unit in model order
 * ActivationCheckpointing.byLayerClass("GPT2Block")
 * ActivationCheckpointing.none()
 * }</pre>
 */
public final class ActivationCheckpointing {

    private static final String SPECS = "none, full, every:N or class:NAME[,NAME...]";

    private final String description;
    private final int every;
    private final LayerClasses classes;

    private ActivationCheckpointing(String description, int every, Set<String> classNames) {
        this.description = description;
        this.every = every;
        this.classes = LayerClasses.of(classNames);
    }

    /** Returns the policy that recomputes no unit: every unit keeps its graph from forward. */
    public static ActivationCheckpointing none() {
        return new ActivationCheckpointing("none", 0, Set.of());
    }

    /** Returns the policy that recomputes every unit (torchtitan's {@code full}). */
    public static ActivationCheckpointing everyUnit() {
        return new ActivationCheckpointing("full", 1, Set.of());
    }

    /**
     * Returns the policy that recomputes every {@code n}-th unit in model order: the n-th, 2n-th,
     * and so on, counting from 1 (torchtitan's selective option {@code n}).
     *
     * @param n how many units make one recomputed unit, at least 1
     * @return the policy
     * @throws IllegalArgumentException if {@code n} is less than 1
     */
    public static ActivationCheckpointing everyNthUnit(int n) {
        if (n < 1) {
            throw new IllegalArgumentException(
                    "every N-th unit needs N >= 1 (1 recomputes every unit), got " + n);
        }
        return n == 1 ? everyUnit() : new ActivationCheckpointing("every:" + n, n, Set.of());
    }

    /**
     * Returns the policy that recomputes the units whose block class has one of the given simple or
     * fully qualified names; a name must match at least one unit's block.
     *
     * @param classNames the block class names
     * @return the policy
     * @throws IllegalArgumentException if no name is given
     */
    public static ActivationCheckpointing byLayerClass(String... classNames) {
        if (classNames.length == 0) {
            throw new IllegalArgumentException(
                    "activation checkpointing by layer class needs at least one class name");
        }
        Set<String> names = new TreeSet<>(Arrays.asList(classNames));
        return new ActivationCheckpointing("class:" + String.join(",", names), 0, names);
    }

    /**
     * Returns {@link #everyUnit()} for true and {@link #none()} for false.
     *
     * @param recompute whether every unit is recomputed
     * @return the policy
     */
    public static ActivationCheckpointing of(boolean recompute) {
        return recompute ? everyUnit() : none();
    }

    /**
     * Returns the policy a configuration that sets none gets: every unit where a unit's parameters
     * are freed after its forward ({@code FULL_SHARD}, {@code HYBRID_SHARD}), none where they are
     * kept until its backward ({@code SHARD_GRAD_OP}, {@code HYBRID_SHARD_ZERO2}, {@code
     * NO_SHARD}). Where parameters are freed, recompute measured faster and smaller on this
     * project's CPUs (docs/fsdp.md); where they are kept, it saves the activations only, for time
     * that measured anywhere from 0.5x to 1.9x of keeping them, so FSDP's default (none) stays.
     *
     * @param reshardAfterForward whether units free their gathered parameters after forward
     * @return the policy
     */
    public static ActivationCheckpointing defaultFor(boolean reshardAfterForward) {
        return of(reshardAfterForward);
    }

    /**
     * Parses a policy as a command line writes it: {@code none}, {@code full}, {@code every:N},
     * {@code class:NAME[,NAME...]}, or {@code true} and {@code false} (case does not matter but in
     * class names).
     *
     * @param spec the written policy
     * @return the policy
     * @throws IllegalArgumentException naming the forms, for anything else
     */
    public static ActivationCheckpointing parse(String spec) {
        String value = spec.trim();
        String lower = value.toLowerCase(Locale.ROOT);
        if (lower.equals("none") || lower.equals("false")) {
            return none();
        }
        if (lower.equals("full") || lower.equals("true")) {
            return everyUnit();
        }
        if (lower.startsWith("every:")) {
            try {
                return everyNthUnit(Integer.parseInt(value.substring("every:".length()).trim()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "activation checkpointing '" + spec + "': N in every:N is a whole number");
            }
        }
        if (lower.startsWith("class:")) {
            String[] names =
                    Arrays.stream(value.substring("class:".length()).split(","))
                            .map(String::trim)
                            .filter(name -> !name.isEmpty())
                            .toArray(String[]::new);
            return byLayerClass(names);
        }
        throw new IllegalArgumentException(
                "activation checkpointing '" + spec + "' is not one of " + SPECS);
    }

    /**
     * Decides for each unit whether it is recomputed.
     *
     * @param unitBlocks the units' blocks in model order, the root excluded
     * @return one entry per unit, true where it is recomputed
     * @throws IllegalArgumentException when a layer class names no unit's block, listing the units'
     *     classes
     */
    public boolean[] select(List<Block> unitBlocks) {
        boolean[] recomputed = new boolean[unitBlocks.size()];
        for (int i = 0; i < recomputed.length; i++) {
            // A class matches as the wrap policy matches it: its simple or qualified name.
            recomputed[i] = every > 0 ? (i + 1) % every == 0 : classes.matches(unitBlocks.get(i));
        }
        // Not the planner's check: a class recomputed must be a unit's, not only the model's.
        List<String> unmatched = classes.unmatched(unitBlocks);
        if (!unmatched.isEmpty()) {
            Set<String> unitClasses = new TreeSet<>();
            unitBlocks.forEach(block -> unitClasses.add(block.getClass().getSimpleName()));
            throw new IllegalArgumentException(
                    "activation checkpointing by layer class "
                            + unmatched
                            + " matches no FSDP unit; the units' classes are "
                            + unitClasses
                            + ": name one of those (a class recomputed must be a unit, see the"
                            + " wrap policy)");
        }
        return recomputed;
    }

    /** Returns whether this policy recomputes no unit at all. */
    public boolean isNone() {
        return every == 0 && classes.names().isEmpty();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof ActivationCheckpointing policy
                && description.equals(policy.description);
    }

    @Override
    public int hashCode() {
        return Objects.hash(description);
    }

    /** Returns the policy as {@link #parse} reads it: {@code none}, {@code full}, ... */
    @Override
    public String toString() {
        return description;
    }
}
