package ai.djl.fsdp.trainer;

import ai.djl.fsdp.wrap.LayerClasses;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Chooses the blocks of a model that become FSDP units.
 *
 * <p>The model's block tree is walked from the top; the first block on each path that the policy
 * accepts becomes a unit and the walk does not descend into it, so units never nest. The model's
 * own top block is never asked: everything outside the units forms the root unit.
 */
@FunctionalInterface
public interface WrapPolicy extends Predicate<Block> {

    /**
     * Returns whether {@code block} becomes a unit.
     *
     * @param block a block below the model's top block, not inside a unit already
     * @return true to make it a unit
     */
    boolean shouldWrap(Block block);

    /** Returns {@link #shouldWrap}: the planner below the trainer sees a policy as a predicate. */
    @Override
    default boolean test(Block block) {
        return shouldWrap(block);
    }

    /**
     * Wraps blocks whose class has one of the given names: simple names such as {@code GPT2Block}
     * or {@code LlamaDecoderLayer}, or fully qualified ones.
     *
     * @param classNames the block class names
     * @return the policy
     */
    static WrapPolicy byLayerClass(String... classNames) {
        return byLayerClass(Arrays.asList(classNames));
    }

    /**
     * Wraps blocks whose class has one of the given simple or fully qualified names. Each name must
     * match a block of the model: the trainer refuses one that matches none (a misspelling), naming
     * it and the model's block classes, before any parameter is initialized.
     *
     * @param classNames the block class names
     * @return the policy
     */
    static WrapPolicy byLayerClass(List<String> classNames) {
        if (classNames.isEmpty()) {
            throw new IllegalArgumentException("byLayerClass needs at least one class name");
        }
        /** The policy, with its classes for the planner to check against the model. */
        record ByLayerClass(LayerClasses layerClasses) implements WrapPolicy, LayerClasses.Policy {
            @Override
            public boolean shouldWrap(Block block) {
                return layerClasses.matches(block);
            }
        }
        return new ByLayerClass(LayerClasses.of(classNames));
    }

    /**
     * Wraps the innermost blocks holding at least {@code minParameters} parameter elements: a block
     * qualifies when it holds that many and none of its children does on its own.
     *
     * @param minParameters the least number of parameter elements in a unit
     * @return the policy
     */
    static WrapPolicy byMinParameters(long minParameters) {
        if (minParameters <= 0) {
            throw new IllegalArgumentException(
                    "byMinParameters needs a positive count, got " + minParameters);
        }
        return block ->
                countParameters(block) >= minParameters
                        && block.getChildren().values().stream()
                                .allMatch(child -> countParameters(child) < minParameters);
    }

    /**
     * Wraps the blocks that {@code predicate} accepts.
     *
     * @param predicate decides for each block
     * @return the policy
     */
    static WrapPolicy matching(Predicate<Block> predicate) {
        Objects.requireNonNull(predicate, "predicate");
        return predicate::test;
    }

    /**
     * Returns the number of parameter elements {@code block} holds, each shared parameter counted
     * once; blocks not yet initialized count zero.
     *
     * @param block the block
     * @return the element count
     */
    static long countParameters(Block block) {
        return block.getParameters().stream()
                .map(Pair::getValue)
                .filter(p -> p.getShape() != null)
                .collect(Collectors.toMap(Parameter::getId, p -> p.getShape().size(), (a, b) -> a))
                .values()
                .stream()
                .mapToLong(Long::longValue)
                .sum();
    }
}
