package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a full state written unit by unit holds: the tensors it declares up front, and the tensors
 * each gathered unit contributes. The plain model's state is {@link #parameters}; LoRA plugs in
 * transforms that merge adapters into their base weights, or keep only the adapters.
 */
public interface StateTransform {

    /**
     * A tensor of the written state.
     *
     * @param name its name in the file
     * @param dtype its element type
     * @param shape its shape
     */
    record Entry(String name, Dtype dtype, Shape shape) {}

    /** Receives the tensors of one unit. */
    @FunctionalInterface
    interface Sink {

        /**
         * Writes one tensor.
         *
         * @param name a declared name
         * @param value its value
         * @throws IOException if writing fails
         */
        void put(String name, NDArray value) throws IOException;
    }

    /** Returns every tensor of the state, in file order. */
    List<Entry> declare();

    /**
     * Hands {@code sink} the tensors {@code unit} contributes; may change the unit's gathered
     * arrays (they are copies).
     *
     * @param unit a gathered unit
     * @param sink where the tensors go
     * @throws IOException if writing fails
     */
    void transform(GatheredUnit unit, Sink sink) throws IOException;

    /**
     * Returns the state of the given parameters under the given names, as they are.
     *
     * @param named the parameters by name, in file order
     * @return the transform
     */
    static StateTransform parameters(Map<String, Parameter> named) {
        Map<Parameter, String> names = new IdentityHashMap<>();
        List<Entry> entries = new ArrayList<>(named.size());
        named.forEach(
                (name, parameter) -> {
                    names.put(parameter, name);
                    // A released array keeps its element type; the shape lives on the parameter.
                    entries.add(
                            new Entry(
                                    name,
                                    Dtype.of(parameter.getArray().getDataType()),
                                    parameter.getShape()));
                });
        return new StateTransform() {
            @Override
            public List<Entry> declare() {
                return entries;
            }

            @Override
            public void transform(GatheredUnit unit, Sink sink) throws IOException {
                for (Parameter parameter : unit.getParameters()) {
                    String name = names.get(parameter);
                    if (name != null) {
                        sink.put(name, parameter.getArray());
                    }
                }
            }
        };
    }

    /**
     * Returns a model's own state: every parameter under its dotted name.
     *
     * @param root the model
     * @return the transform
     */
    static StateTransform parameters(Block root) {
        return parameters(StateDict.parameters(root));
    }
}
