package ai.djl.fsdp.lora;

import ai.djl.fsdp.checkpoint.StateTransform;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * What LoRA plugs into the writing of a sharded model's state ({@link
 * ai.djl.fsdp.checkpoint.ModelStateWriter}), unit by unit: the merged model, or the adapters alone
 * in PEFT's names.
 */
public final class LoraState {

    private LoraState() {}

    /**
     * Returns the state a model will have once its adapters are merged, for writing unit by unit
     * ({@link ai.djl.fsdp.checkpoint.ModelStateWriter}): in each gathered unit, the adapters are
     * merged into copies of their base weights, which are written under the plain model's names.
     * The model itself keeps its adapters. A model without adapters is written as it is.
     *
     * @param root the model, adapted or not
     * @return the transform
     */
    public static StateTransform merged(Block root) {
        return merged(root, base(root));
    }

    /**
     * Returns the state a model will have once its adapters are merged, as {@link #merged(Block)}
     * does, over a given state of its base: one that hands each adapted weight, under its name in
     * {@link Lora#mergedParameters}, as a float array in the weight's layout (a frozen base held in
     * another form, such as 4 bits, decoded).
     *
     * @param root the model, adapted or not
     * @param base the base's state under the plain model's names
     * @return the transform
     */
    public static StateTransform merged(Block root, StateTransform base) {
        Map<String, Parameter> named = Lora.mergedParameters(root);
        Map<Parameter, LoraLinear> adapterByA = new IdentityHashMap<>();
        Map<Parameter, LoraLinear> adapterByWeight = new IdentityHashMap<>();
        Lora.adapters(root)
                .values()
                .forEach(
                        lora -> {
                            adapterByA.put(lora.getLoraA(), lora);
                            adapterByWeight.put(lora.getBase().getParameters().get("weight"), lora);
                        });
        return StateTransform.of(
                base.declare(),
                (unit, sink) -> {
                    Set<Parameter> inUnit = Collections.newSetFromMap(new IdentityHashMap<>());
                    inUnit.addAll(unit.getParameters());
                    for (Parameter parameter : unit.getParameters()) {
                        LoraLinear lora = adapterByA.get(parameter);
                        if (lora != null
                                && !inUnit.contains(lora.getBase().getParameters().get("weight"))) {
                            throw new IllegalStateException(
                                    "an adapter of FSDP unit "
                                            + unit.getName()
                                            + " adapts a weight outside it; wrap the adapted"
                                            + " projection's parent, not the projection");
                        }
                    }
                    // Each weight is merged as it is written, into the unit's gathered copy, or a
                    // float32 copy of it where it is held narrower (the sum is rounded once, to
                    // the stored type): only one merged tensor exists beyond the unit.
                    base.transform(
                            unit,
                            (name, value) -> {
                                LoraLinear lora = adapterByWeight.get(named.get(name));
                                if (lora == null) {
                                    sink.put(name, value);
                                    return;
                                }
                                if (Dtype.ofArray(value).bytes() >= Dtype.F32.bytes()) {
                                    lora.mergeInto(value);
                                    sink.put(name, value);
                                    return;
                                }
                                try (NDArray wide = Precision.FLOAT32.cast(value)) {
                                    lora.mergeInto(wide);
                                    sink.put(name, wide);
                                }
                            });
                });
    }

    /**
     * Returns the state of the model the adapters are put on, for writing unit by unit: the base
     * weights as they are, without the adapters, under the plain model's names (those {@link
     * #merged} writes). A model without adapters is written as it is.
     *
     * @param root the model, adapted or not
     * @return the transform
     */
    public static StateTransform base(Block root) {
        return StateTransform.parameters(Lora.mergedParameters(root));
    }

    /**
     * Returns the adapters' state in PEFT's names ({@code base_model.model.<module>.lora_A.weight},
     * and the parameters of the modules saved with them, {@link Lora#savedParameters}), for writing
     * unit by unit: every rank's part of every adapter, gathered.
     *
     * @param root the adapted model
     * @param config the configuration the adapters were made with
     * @return the transform
     * @throws IllegalStateException if the model has no adapters
     */
    public static StateTransform adapters(Block root, LoraConfig config) {
        return StateTransform.parameters(Lora.savedParameters(root, config));
    }
}
