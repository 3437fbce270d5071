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

    /**
     * Receives the tensors of one unit. A floating tensor may come in any floating type: it is
     * stored in its declared type, cast alone as it is written. Bytes that another type labels go
     * through {@link #putBytes}.
     */
    @FunctionalInterface
    interface Sink {

        /**
         * Writes one tensor.
         *
         * @param name a declared name
         * @param value its value, of the declared shape; of the declared type, or of any floating
         *     type when that is floating
         * @throws IOException if writing fails
         * @throws IllegalArgumentException if the value's type or shape is not the declared one
         */
        void put(String name, NDArray value) throws IOException;

        /**
         * Writes one tensor's bytes as they are, whatever type it was declared with: bytes that
         * another type labels, such as packed 4-bit codes stored as bitsandbytes' storage type.
         * Only the sink that writes the file takes them; one that passes tensors on refuses them.
         *
         * @param name a declared name
         * @param bytes a uint8 array of exactly as many bytes as the declared tensor holds
         * @throws IOException if writing fails
         * @throws IllegalArgumentException if {@code bytes} is not uint8 or not the declared size
         */
        default void putBytes(String name, NDArray bytes) throws IOException {
            throw new UnsupportedOperationException(
                    "this sink passes tensors on and takes no bytes for \""
                            + name
                            + "\": hand them to the sink that writes the file");
        }
    }

    /** What each gathered unit contributes to a state: the body of {@link #transform}. */
    @FunctionalInterface
    interface UnitTensors {

        /**
         * Hands {@code sink} the tensors {@code unit} contributes.
         *
         * @param unit a gathered unit
         * @param sink where the tensors go
         * @throws IOException if writing fails
         */
        void transform(GatheredUnit unit, Sink sink) throws IOException;
    }

    /**
     * Returns the state that declares {@code entries} and takes each unit's tensors from {@code
     * units}.
     *
     * @param entries every tensor of the state, in file order
     * @param units what each unit contributes
     * @return the transform
     */
    static StateTransform of(List<Entry> entries, UnitTensors units) {
        List<Entry> declared = List.copyOf(entries);
        return new StateTransform() {
            @Override
            public List<Entry> declare() {
                return declared;
            }

            @Override
            public void transform(GatheredUnit unit, Sink sink) throws IOException {
                units.transform(unit, sink);
            }
        };
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
     * Returns this state with its floating-point tensors stored as {@code type} (Hugging Face saves
     * a model in its {@code torch_dtype}): the writer casts each tensor as its unit hands it over,
     * so only one tensor's copy exists at a time, and none where the unit holds it in that type
     * already. Other tensors are written as they are.
     *
     * @param type {@link Dtype#F32}, {@link Dtype#BF16} or {@link Dtype#F16}
     * @return the transform
     */
    default StateTransform withFloatsAs(Dtype type) {
        if (!isFloat(type) || type == Dtype.F64) {
            throw new IllegalArgumentException(
                    "a state is stored as F32, BF16 or F16, not " + type);
        }
        List<Entry> entries = new ArrayList<>();
        for (Entry entry : declare()) {
            entries.add(
                    isFloat(entry.dtype()) ? new Entry(entry.name(), type, entry.shape()) : entry);
        }
        return of(entries, this::transform);
    }

    /**
     * Returns whether {@code type} is a floating-point type, which a {@link Sink} stores in its
     * declared type whatever the type it is handed.
     *
     * @param type a type
     * @return true for F16, BF16, F32 and F64
     */
    static boolean isFloat(Dtype type) {
        return type == Dtype.F16 || type == Dtype.BF16 || type == Dtype.F32 || type == Dtype.F64;
    }

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
                    Dtype type = Dtype.of(parameter.getArray().getDataType());
                    entries.add(new Entry(name, type, parameter.getShape()));
                });
        return of(
                entries,
                (unit, sink) -> {
                    for (Parameter parameter : unit.getParameters()) {
                        String name = names.get(parameter);
                        if (name != null) {
                            // As gathered: a frozen base held narrower is cast by the writer.
                            sink.put(name, parameter.getArray());
                        }
                    }
                });
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
