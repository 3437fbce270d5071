package ai.djl.fsdp.qlora;

import ai.djl.fsdp.lora.LinearProjection;
import ai.djl.fsdp.lora.LoraLinear;
import ai.djl.fsdp.quant.QuantConfig;
import ai.djl.fsdp.reflect.BlockChildren;
import ai.djl.fsdp.statedict.StateDict;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Puts a 4-bit base in place: each linear projection of a model, but those skipped (transformers
 * keeps the output head, {@code lm_head}, unquantized by default) and those whose weight another
 * module holds too (a head tied to the token embedding, whatever the skip list says: quantizing it
 * would untie the two and take the embedding's float weight away), becomes a {@link
 * QuantizedLinear}; embeddings, norms and everything else keep their float weights. Apply LoRA
 * afterwards: its adapters wrap the quantized projections as they wrap float ones.
 */
public final class Qlora {

    /** The modules transformers leaves unquantized by default: the output head. */
    public static final List<String> DEFAULT_SKIP = List.of("lm_head");

    private Qlora() {}

    /**
     * Quantizes the model's linear projections in place.
     *
     * @param root the model, initialized (each projection is quantized now) or not (each is
     *     quantized as the model initializes it, one unit at a time under FSDP), without adapters
     * @param config the code, block size and double quantization
     * @param skip module names left in float, such as {@link #DEFAULT_SKIP}: transformers' {@code
     *     modules_to_not_convert}, matched as transformers matches them (a projection is skipped
     *     where an entry is its own name, its dotted path, or a part of its path followed by a dot,
     *     such as an ancestor's path); a projection whose weight is tied to another module's is
     *     left in float too
     * @return the dotted paths of the quantized projections
     * @throws IllegalStateException if the model already has adapters
     * @throws IllegalArgumentException if an initialized projection's weight is not float32
     */
    public static List<String> quantize(Block root, QuantConfig config, List<String> skip) {
        Map<String, Block> modules = StateDict.modules(root);
        Set<Parameter> tied = tiedParameters(modules.values());
        List<String> quantized = new ArrayList<>();
        for (Map.Entry<String, Block> entry : modules.entrySet()) {
            String path = entry.getKey();
            Block block = entry.getValue();
            if (block instanceof LoraLinear) {
                throw new IllegalStateException(
                        "quantize the base before adding LoRA adapters: " + path + " is adapted");
            }
            if (!(block instanceof LinearProjection projection)
                    || block instanceof QuantizedLinear
                    || skips(path, skip)) {
                continue;
            }
            Parameter weight = projection.getParameters().get(QuantizedLinear.WEIGHT);
            if (tied.contains(weight)) {
                continue;
            }
            int dot = path.lastIndexOf('.');
            Block parent = modules.get(dot < 0 ? "" : path.substring(0, dot));
            QuantizedLinear replacement = new QuantizedLinear(projection, config);
            if (weight != null && weight.isInitialized()) {
                NDArray values = weight.getArray();
                replacement.initialize(
                        values.getManager(),
                        DataType.FLOAT32,
                        new Shape(1, projection.inFeatures()));
            }
            BlockChildren.replace(parent, projection, replacement);
            quantized.add(path);
        }
        return quantized;
    }

    /**
     * Returns whether a module stays in float, where either of transformers' rules for bitsandbytes
     * keeps it: 4.x's {@code _replace_with_bnb_linear} (an entry of the skip list is the module's
     * own name, the last component of its path, its whole dotted path, or a part of its path
     * followed by a dot, as an ancestor's path or name is: {@code model.layers.1.mlp} or {@code
     * mlp} skip {@code model.layers.1.mlp.down_proj}) or the later {@code should_convert_module}
     * (the path ends with the entry: {@code mlp.down_proj} skips every layer's, here at a component
     * boundary). Keeping in float what one of them keeps is the safer error.
     *
     * @param path the module's dotted path
     * @param skip the skip list
     * @return true if the module is left in float
     */
    static boolean skips(String path, List<String> skip) {
        String name = path.substring(path.lastIndexOf('.') + 1);
        for (String key : skip) {
            // Python's `key + "." in path`: a plain substring, as transformers tests it.
            if (key.equals(name)
                    || key.equals(path)
                    || path.contains(key + ".")
                    || path.endsWith("." + key)) {
                return true;
            }
        }
        return false;
    }

    /** The parameters more than one module holds as its own. */
    private static Set<Parameter> tiedParameters(Collection<Block> modules) {
        Set<Parameter> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Set<Parameter> tied = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Block block : modules) {
            for (Parameter parameter : block.getDirectParameters().values()) {
                if (!seen.add(parameter)) {
                    tied.add(parameter);
                }
            }
        }
        return tied;
    }
}
