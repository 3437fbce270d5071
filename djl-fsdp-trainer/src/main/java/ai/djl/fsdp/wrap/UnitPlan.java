package ai.djl.fsdp.wrap;

import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Which FSDP units a model has and which parameters each owns: the units a wrap policy (the
 * trainer's {@code WrapPolicy}) chooses, in forward order, and the root unit holding every
 * parameter outside them. Each parameter has exactly one owner; units are named by their dotted
 * path, the root {@code "root"}.
 */
public final class UnitPlan {

    /** The name of the unit that holds the parameters outside every other unit. */
    public static final String ROOT = "root";

    private final List<PlannedUnit> units;

    private UnitPlan(List<PlannedUnit> units) {
        this.units = Collections.unmodifiableList(units);
    }

    /**
     * Plans the units of {@code root}, with {@code buffers} telling which parameters are buffers
     * (kept whole on every rank, see {@link #isBuffer}): a unit shards all its other parameters.
     *
     * @param root the model's top block, initialized
     * @param policy whether a block becomes a unit (see {@link WrapPlanner#plan})
     * @param buffers whether a parameter is a buffer
     * @return the plan
     * @throws IllegalArgumentException if the policy matches nothing, a parameter is shared by two
     *     units, or a buffer takes a gradient
     */
    public static UnitPlan of(Block root, Predicate<Block> policy, Predicate<Parameter> buffers) {
        List<WrapTarget> targets = WrapPlanner.plan(root, policy);
        Map<String, String> ownerOf = new HashMap<>();
        List<PlannedUnit> units = new ArrayList<>(targets.size() + 1);
        units.add(null); // the root, once the others have taken theirs
        for (WrapTarget target : targets) {
            List<Parameter> parameters = distinct(target.block());
            for (Parameter parameter : parameters) {
                String previous = ownerOf.putIfAbsent(parameter.getId(), target.path());
                if (previous != null) {
                    throw new IllegalArgumentException(
                            "Parameter "
                                    + parameter.getName()
                                    + " is shared by units "
                                    + previous
                                    + " and "
                                    + target.path()
                                    + "; a shared parameter must live outside the units (in the"
                                    + " root). Choose a wrap policy that leaves its users out.");
                }
            }
            units.add(
                    new PlannedUnit(
                            units.size(),
                            target.path(),
                            target.block(),
                            target.parents(),
                            without(parameters, buffers),
                            only(parameters, buffers)));
        }
        List<Parameter> rootParameters = new ArrayList<>();
        for (Parameter parameter : distinct(root)) {
            if (!ownerOf.containsKey(parameter.getId())) {
                rootParameters.add(parameter);
            }
        }
        units.set(
                0,
                new PlannedUnit(
                        0,
                        ROOT,
                        root,
                        List.of(),
                        without(rootParameters, buffers),
                        only(rootParameters, buffers)));
        return new UnitPlan(units);
    }

    /**
     * Returns whether {@code parameter} is a buffer by default: state its block updates itself in a
     * training forward rather than the optimizer, as DJL's {@code BatchNorm} does its running mean
     * and variance (the parameter types {@code RUNNING_MEAN} and {@code RUNNING_VAR}, which take no
     * gradient). Buffers are not sharded: every rank keeps the whole array, as DDP does.
     *
     * @param parameter a parameter
     * @return whether it is a buffer
     */
    public static boolean isBuffer(Parameter parameter) {
        Parameter.Type type = parameter.getType();
        return !parameter.requiresGradient()
                && (type == Parameter.Type.RUNNING_MEAN || type == Parameter.Type.RUNNING_VAR);
    }

    /** Returns the units, the root first, then in forward order. */
    public List<PlannedUnit> getUnits() {
        return units;
    }

    private static List<Parameter> without(
            List<Parameter> parameters, Predicate<Parameter> buffers) {
        return parameters.stream().filter(buffers.negate()).toList();
    }

    private static List<Parameter> only(List<Parameter> parameters, Predicate<Parameter> buffers) {
        List<Parameter> selected = parameters.stream().filter(buffers).toList();
        for (Parameter buffer : selected) {
            if (buffer.requiresGradient()) {
                throw new IllegalArgumentException(
                        "Parameter "
                                + buffer.getName()
                                + " is chosen as a buffer but takes a gradient: a buffer is state"
                                + " its block updates itself, which the optimizer leaves alone."
                                + " Freeze it (Parameter.freeze(true)) or leave it out of"
                                + " FsdpConfig.optBuffers.");
            }
        }
        return selected;
    }

    /** The block's parameters, each shared parameter once, in DJL's order. */
    private static List<Parameter> distinct(Block block) {
        Map<String, Parameter> byId = new LinkedHashMap<>();
        for (Pair<String, Parameter> pair : block.getParameters()) {
            byId.putIfAbsent(pair.getValue().getId(), pair.getValue());
        }
        return new ArrayList<>(byId.values());
    }

    /**
     * One planned unit.
     *
     * @param index its position: 0 for the root, then forward order
     * @param name its dotted path, or {@link #ROOT}
     * @param block the block it runs (the model's top block for the root)
     * @param parents the blocks holding it as a child (several for a block the model shares); none
     *     for the root
     * @param parameters the parameters it owns and shards, in DJL's order
     * @param buffers the buffers it owns, kept whole on every rank
     */
    public record PlannedUnit(
            int index,
            String name,
            Block block,
            List<Block> parents,
            List<Parameter> parameters,
            List<Parameter> buffers) {

        /** Returns whether this is the root unit. */
        public boolean isRoot() {
            return index == 0;
        }

        /**
         * Returns the owned parameters that train, or those that are frozen: the two never share a
         * flat buffer.
         *
         * @param trainable which kind
         * @return those parameters, in order
         */
        public List<Parameter> parameters(boolean trainable) {
            List<Parameter> selected = new ArrayList<>();
            for (Parameter parameter : parameters) {
                if (parameter.requiresGradient() == trainable) {
                    selected.add(parameter);
                }
            }
            return selected;
        }
    }
}
