package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.param.FlatLayout;
import ai.djl.fsdp.param.FlatParameter;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.tensor.OptimizerStates;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A copy, in host memory, of what one rank writes into a sharded checkpoint: its piece of every
 * parameter and of the optimizer's state for it, taken at once so that training can go on while the
 * copy is written (see {@link CheckpointMetadata} for the names).
 */
public final class ShardSnapshot {

    private final SafetensorsWriter writer;
    private final String file;

    private ShardSnapshot(SafetensorsWriter writer, String file) {
        this.writer = writer;
        this.file = file;
    }

    /**
     * Copies this rank's pieces.
     *
     * @param flats the model's flat parameters
     * @param buffers the model's buffers, written whole by rank 0
     * @param names each parameter's dotted name
     * @param optimizer the optimizer whose state is saved with the trainable parameters
     * @param optimizerKinds the kinds of its state to save
     * @return the snapshot, or null when this rank writes nothing (a replica of rank 0's)
     */
    public static ShardSnapshot take(
            List<FlatParameter> flats,
            List<Parameter> buffers,
            Map<Parameter, String> names,
            Optimizer optimizer,
            List<String> optimizerKinds,
            int rank) {
        if (flats.isEmpty() || rank >= flats.get(0).getLayout().getShardCount()) {
            return null;
        }
        SafetensorsWriter writer =
                new SafetensorsWriter().putMetadata("format", CheckpointMetadata.FORMAT);
        for (FlatParameter flat : flats) {
            // Saved in the parameters' own type: the files do not depend on how shards are
            // stored (a bfloat16 frozen shard widens exactly), so any precision resumes them.
            NDArray shard = flat.getShard();
            NDArray saved = Precision.cast(shard, flat.getDataType());
            try {
                add(writer, flat, saved, "", names);
            } finally {
                if (saved != shard) {
                    saved.close();
                }
            }
            if (flat.isTrainable()) {
                Map<String, NDArray> state = OptimizerStates.arrays(optimizer, flat.getId());
                for (String kind : optimizerKinds) {
                    NDArray array = state.get(kind);
                    if (array == null) {
                        throw new IllegalStateException(
                                "The optimizer keeps no "
                                        + kind
                                        + " for "
                                        + flat.getId()
                                        + " though it does for other parameters");
                    }
                    add(
                            writer,
                            flat,
                            array,
                            CheckpointMetadata.OPTIMIZER_PREFIX + kind + ".",
                            names);
                }
            }
        }
        if (rank == 0) {
            for (Parameter buffer : buffers) {
                // 1-D, as every piece in these files.
                try (NDArray flat = buffer.getArray().flatten()) {
                    writer.add(names.get(buffer), flat);
                }
            }
        }
        FlatParameter first = flats.get(0);
        return new ShardSnapshot(
                writer,
                CheckpointDirectory.shardFile(
                        first.getShardIndex(), first.getLayout().getShardCount()));
    }

    /** Adds each parameter's piece of a shard-shaped array under {@code prefix + name}. */
    private static void add(
            SafetensorsWriter writer,
            FlatParameter flat,
            NDArray shardArray,
            String prefix,
            Map<Parameter, String> names) {
        FlatLayout layout = flat.getLayout();
        for (int i = 0; i < layout.getParameterCount(); i++) {
            FlatLayout.Overlap overlap = layout.overlap(i, flat.getShardIndex());
            if (overlap == null) {
                continue;
            }
            try (NDArray piece =
                    shardArray.get(
                            new NDIndex(
                                    "{}:{}",
                                    overlap.shardOffset(),
                                    overlap.shardOffset() + overlap.size()))) {
                writer.add(prefix + names.get(flat.getParameters().get(i)), piece);
            }
        }
    }

    /** Returns the file this snapshot is written to, relative to the checkpoint directory. */
    public String getFile() {
        return file;
    }

    /**
     * Writes the snapshot into a checkpoint directory (atomically: under a temporary name first).
     *
     * @param directory the checkpoint directory being written
     * @throws IOException if writing fails
     */
    public void write(Path directory) throws IOException {
        writer.write(directory.resolve(file));
    }
}
