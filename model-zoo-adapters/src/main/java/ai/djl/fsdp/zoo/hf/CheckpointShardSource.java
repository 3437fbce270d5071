package ai.djl.fsdp.zoo.hf;

import ai.djl.fsdp.checkpoint.ParameterSource;
import ai.djl.fsdp.qlora.PrequantizedSource;
import ai.djl.fsdp.safetensors.SafetensorsCheckpoint;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.util.Map;

/**
 * A Hugging Face checkpoint as the source FSDP reads each rank's shards from: a shard's elements of
 * a parameter are read from the safetensors file alone, touching only their bytes. Made by {@link
 * HfCheckpoint#shardSource}, which has matched the parameters to the tensors. A vocabulary matrix
 * that grows as it loads ({@link VocabularyResize}) reads its stored rows from the file and its
 * added rows from {@link AddedRows}, made only by a rank whose shard holds some of them. A
 * pre-quantized checkpoint's 4-bit layers are read by {@link PrequantizedSource}.
 */
public final class CheckpointShardSource implements ParameterSource, AutoCloseable {

    private final SafetensorsCheckpoint checkpoint;
    private final Map<String, String> tensorByParameterId;
    private final Map<String, AddedRows> addedByParameterId;
    private final PrequantizedSource packed;

    CheckpointShardSource(
            SafetensorsCheckpoint checkpoint,
            Map<String, String> tensorByParameterId,
            Map<String, AddedRows> addedByParameterId,
            PrequantizedSource packed) {
        this.checkpoint = checkpoint;
        this.packed = packed;
        this.tensorByParameterId = Map.copyOf(tensorByParameterId);
        this.addedByParameterId = Map.copyOf(addedByParameterId);
    }

    /** {@inheritDoc} Parameters the checkpoint does not hold (adapters) read as null. */
    @Override
    public NDArray read(NDManager manager, Parameter parameter, long from, long to)
            throws IOException {
        if (packed.holds(parameter)) {
            return packed.read(manager, parameter, from, to);
        }
        String tensor = tensorByParameterId.get(parameter.getId());
        if (tensor == null) {
            return null;
        }
        AddedRows added = addedByParameterId.get(parameter.getId());
        long stored = added == null ? Long.MAX_VALUE : added.storedElements();
        if (to <= stored) {
            // Read straight into the tensor's own memory (bfloat16 widened by libtorch): nothing
            // on the Java heap, nothing mapped.
            return checkpoint.read(manager, tensor, from, to);
        }
        NDArray grown =
                added.read(
                        manager, checkpoint, tensor, Math.max(from, stored) - stored, to - stored);
        if (from >= stored) {
            return grown;
        }
        try (NDManager scope = manager.newSubManager()) {
            NDArray storedPart = checkpoint.read(scope, tensor, from, stored);
            grown.attach(scope);
            NDArray joined = storedPart.concat(grown.toType(storedPart.getDataType(), false));
            joined.attach(manager);
            return joined;
        }
    }

    /** Closes the checkpoint's files. */
    @Override
    public void close() throws IOException {
        checkpoint.close();
    }
}
