package ai.djl.fsdp.checkpoint;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import java.io.IOException;

/**
 * Where sharding reads parameter values from instead of the parameters' own arrays: a checkpoint on
 * disk, say, so that each rank reads only the elements of its own shard and no rank ever holds the
 * whole model. The parameters then need arrays only for their shape and data type; their contents
 * are never read (an uninitialized allocation costs no resident memory until written).
 */
@FunctionalInterface
public interface ParameterSource {

    /**
     * Reads elements {@code [from, to)} of a parameter's row-major flattening.
     *
     * @param manager the manager that owns the result
     * @param parameter the parameter
     * @param from the first element
     * @param to one past the last element
     * @return a 1-D array of {@code to - from} elements (cast to the parameter's type if needed),
     *     or null when this source does not hold the parameter: its own array is read instead (LoRA
     *     adapters added after loading, for example)
     * @throws IOException if reading fails
     */
    NDArray read(NDManager manager, Parameter parameter, long from, long to) throws IOException;

    /**
     * Returns a source that reads from this one, and from {@code other} the parameters this one
     * does not hold (a base checkpoint, then the adapters saved apart from it).
     *
     * @param other the source of what this one lacks
     * @return the combined source
     */
    default ParameterSource orElse(ParameterSource other) {
        return (manager, parameter, from, to) -> {
            NDArray value = read(manager, parameter, from, to);
            return value != null ? value : other.read(manager, parameter, from, to);
        };
    }
}
