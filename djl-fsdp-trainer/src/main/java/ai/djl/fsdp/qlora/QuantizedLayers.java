package ai.djl.fsdp.qlora;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.util.Pair;
import java.io.IOException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A model's 4-bit layers as the writers of its state meet their parameters in a gathered unit: for
 * each parameter of a layer's 4-bit weight (its packed codes and quant state, all but its bias),
 * the layer and the parameter's role in it ({@code weight}, {@code weight.absmax}, ...).
 */
final class QuantizedLayers {

    private final Map<Parameter, QuantizedLinear> layers = new IdentityHashMap<>();
    private final Map<Parameter, String> roles = new IdentityHashMap<>();

    private QuantizedLayers(Block root) {
        for (Block block : StateDict.modules(root).values()) {
            if (block instanceof QuantizedLinear layer) {
                for (Pair<String, Parameter> pair : layer.getDirectParameters()) {
                    if (!"bias".equals(pair.getKey())) {
                        layers.put(pair.getValue(), layer);
                        roles.put(pair.getValue(), pair.getKey());
                    }
                }
            }
        }
    }

    /** Returns the 4-bit layers of a model. */
    static QuantizedLayers of(Block root) {
        return new QuantizedLayers(root);
    }

    /** Returns the layer whose 4-bit weight {@code parameter} is part of, or null. */
    QuantizedLinear layerOf(Parameter parameter) {
        return layers.get(parameter);
    }

    /**
     * Returns a 4-bit weight's parameter's role ({@link QuantizedLinear#WEIGHT} for the packed
     * codes, {@code weight.absmax}, ...), or null for any other parameter.
     */
    String role(Parameter parameter) {
        return roles.get(parameter);
    }

    /** Returns whether {@code parameter} is a layer's packed codes. */
    boolean isCodes(Parameter parameter) {
        return QuantizedLinear.WEIGHT.equals(roles.get(parameter));
    }

    /** What a state holds for one of a gathered unit's parameters. */
    @FunctionalInterface
    interface ParameterTensors {

        /**
         * Hands {@code sink} the tensors a parameter contributes (none, itself, or others).
         *
         * @param name the parameter's name in the state
         * @param parameter the parameter, holding its gathered array
         * @param sink where the tensors go
         * @throws IOException if writing fails
         */
        void put(String name, Parameter parameter, StateTransform.Sink sink) throws IOException;
    }

    /**
     * Returns the state that declares {@code entries} and hands each gathered unit's named
     * parameters to {@code tensors}, a 4-bit layer's packed codes only where the unit holds the
     * layer's whole weight (its codes and its scales are written or decoded together).
     *
     * @param entries every tensor of the state, in file order
     * @param names the parameters' names in the state; others are left out
     * @param tensors what each parameter contributes
     * @return the transform
     * @throws IllegalStateException naming the unit, as it is written, where a unit holds part of a
     *     4-bit weight only
     */
    StateTransform state(
            List<StateTransform.Entry> entries,
            Map<Parameter, String> names,
            ParameterTensors tensors) {
        return StateTransform.of(
                entries,
                (unit, sink) -> {
                    Set<Parameter> inUnit = Collections.newSetFromMap(new IdentityHashMap<>());
                    inUnit.addAll(unit.getParameters());
                    for (Parameter parameter : unit.getParameters()) {
                        String name = names.get(parameter);
                        if (name == null) {
                            continue;
                        }
                        if (isCodes(parameter)) {
                            requireWhole(layers.get(parameter), unit.getName(), inUnit);
                        }
                        tensors.put(name, parameter, sink);
                    }
                });
    }

    private static void requireWhole(QuantizedLinear layer, String unit, Set<Parameter> inUnit) {
        for (Parameter parameter : layer.getDirectParameters().values()) {
            if (!inUnit.contains(parameter)) {
                throw new IllegalStateException(
                        "FSDP unit "
                                + unit
                                + " holds part of a 4-bit weight only; wrap the quantized"
                                + " projection's parent");
            }
        }
    }
}
