package ai.djl.fsdp.lora;

import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.safetensors.SafetensorsFile;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The adapter weights of a PEFT adapter directory ({@code adapter_model.safetensors}) as a {@link
 * ParameterSource} for a model's adapters: whole, for {@link Lora#load}, or each rank's shard of
 * them while FSDP initializes an adapted model that was never built whole. Parameters other than
 * the adapters read as null.
 */
public final class AdapterSource implements ParameterSource, AutoCloseable {

    private final SafetensorsFile file;
    private final Map<Parameter, String> keys;

    private AdapterSource(SafetensorsFile file, Map<Parameter, String> keys) {
        this.file = file;
        this.keys = keys;
    }

    /**
     * Opens the adapter weights in {@code directory} for the adapters of {@code root}, matching
     * them by PEFT's names.
     *
     * @param root a model with adapters ({@link Lora#apply}), initialized or not
     * @param directory the adapter directory
     * @return the source; close it once the values are read
     * @throws IOException if the file cannot be opened
     * @throws IllegalArgumentException if the adapters do not fit the model (missing or unexpected
     *     keys)
     */
    public static AdapterSource open(Block root, Path directory) throws IOException {
        Map<String, Parameter> expected = Lora.savedParameters(root, Lora.readConfig(directory));
        SafetensorsFile file = SafetensorsFile.open(directory.resolve(Lora.WEIGHTS_FILE));
        Set<String> missing = new TreeSet<>(expected.keySet());
        missing.removeAll(file.getNames());
        // PEFT saves a resized embedding layer whether it trained or not (save_embedding_layers):
        // a key that names one of the model's parameters is read into it.
        Map<String, Parameter> parameters = StateDict.parameters(root);
        Map<String, String> aliases = StateDict.aliases(root);
        Set<String> unexpected = new TreeSet<>();
        for (String name : file.getNames()) {
            String unprefixed =
                    name.startsWith(Lora.PEFT_PREFIX)
                            ? name.substring(Lora.PEFT_PREFIX.length())
                            : name;
            String parameter = aliases.getOrDefault(unprefixed, unprefixed);
            if (!expected.containsKey(name) && parameters.containsKey(parameter)) {
                expected.put(name, parameters.get(parameter));
            } else if (!expected.containsKey(name)) {
                unexpected.add(name);
            }
        }
        if (!missing.isEmpty() || !unexpected.isEmpty()) {
            file.close();
            throw new IllegalArgumentException(
                    "adapters in "
                            + directory
                            + " do not fit this model: missing "
                            + missing
                            + ", unexpected "
                            + unexpected);
        }
        Map<Parameter, String> keys = new IdentityHashMap<>();
        expected.forEach((key, parameter) -> keys.put(parameter, key));
        return new AdapterSource(file, keys);
    }

    /**
     * Returns the adapter parameters this source holds, by their names in the file.
     *
     * @return the names
     */
    Map<Parameter, String> keys() {
        return keys;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if the stored adapter's shape is not the parameter's
     */
    @Override
    public NDArray read(NDManager manager, Parameter parameter, long from, long to)
            throws IOException {
        String key = keys.get(parameter);
        if (key == null) {
            return null;
        }
        Shape stored = file.info(key).shape();
        if (!stored.equals(parameter.getShape())) {
            throw new IllegalArgumentException(
                    "shape mismatch for "
                            + key
                            + ": the model has "
                            + parameter.getShape()
                            + ", the adapters "
                            + stored
                            + " (adapters of another rank or model?)");
        }
        return file.read(manager, key, from, to);
    }

    /** Unmaps the file. */
    @Override
    public void close() throws IOException {
        file.close();
    }
}
