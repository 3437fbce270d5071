package ai.djl.fsdp.checkpoint;

import ai.djl.Device;
import ai.djl.fsdp.internal.param.FlatLayout;
import ai.djl.fsdp.internal.param.FlatParameter;
import ai.djl.fsdp.reflect.OptimizerStates;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.tensor.Precision;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.Optimizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What one rank writes into a sharded checkpoint: its piece of every parameter and of the
 * optimizer's state for it (see {@link CheckpointMetadata} for the names), fixed at once so that
 * training can go on while the file is written. What training changes (trainable shards and their
 * optimizer state) is copied in native memory when the snapshot is taken; frozen shards never
 * change and are read in place. Every piece is written in the type its shard is stored in (a frozen
 * base held in bfloat16 is saved in bfloat16, half float32's bytes; readers widen it exactly), and
 * the file is streamed one piece at a time from that memory, so writing holds nothing beyond the
 * copies.
 */
final class ShardSnapshot {

    /** One tensor of the file: elements {@code [from, to)} of a shard-shaped array. */
    private record Piece(String name, NDArray source, long from, long to) {}

    private final SafetensorsWriter writer;
    private final List<Piece> pieces;
    private final NDManager copies;
    private final String file;

    private ShardSnapshot(
            SafetensorsWriter writer, List<Piece> pieces, NDManager copies, String file) {
        this.writer = writer;
        this.pieces = pieces;
        this.copies = copies;
        this.file = file;
    }

    /**
     * Takes this rank's pieces: copies of what training changes, the frozen shards as they are.
     *
     * @param flats the model's flat parameters
     * @param buffers the model's buffers, written whole by rank 0
     * @param names each parameter's dotted name
     * @param optimizer the optimizer whose state is saved with the trainable parameters
     * @param optimizerKinds the kinds of its state to save
     * @param rank this rank
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
        List<Piece> pieces = new ArrayList<>();
        NDManager copies = flats.get(0).getShard().getManager().newSubManager(Device.cpu());
        copies.setName("fsdp-checkpoint-snapshot");
        for (FlatParameter flat : flats) {
            // Saved in the type the shard is stored in: a bfloat16 frozen shard widens exactly to
            // float32 when read, so any precision resumes it.
            NDArray shard = flat.getShard();
            add(writer, pieces, flat, flat.isTrainable() ? copy(shard, copies) : shard, "", names);
            if (flat.isTrainable()) {
                Map<String, NDArray> state = OptimizerStates.arrays(optimizer, flat.getId());
                for (String kind : optimizerKinds) {
                    NDArray array = state.get(kind);
                    if (array == null) {
                        copies.close();
                        throw new IllegalStateException(
                                "The optimizer keeps no "
                                        + kind
                                        + " for "
                                        + flat.getId()
                                        + " though it does for other parameters");
                    }
                    add(
                            writer,
                            pieces,
                            flat,
                            copy(array, copies),
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
                pieces,
                copies,
                CheckpointDirectory.shardFile(
                        first.getShardIndex(), first.getLayout().getShardCount()));
    }

    /** A host copy (a GPU's memory is not spent on it), owned by {@code copies}. */
    private static NDArray copy(NDArray array, NDManager copies) {
        NDArray copy = Precision.toDevice(array, Device.cpu(), true);
        copy.attach(copies);
        return copy;
    }

    /** Declares each parameter's piece of a shard-shaped array under {@code prefix + name}. */
    private static void add(
            SafetensorsWriter writer,
            List<Piece> pieces,
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
            String name = prefix + names.get(flat.getParameters().get(i));
            writer.declare(name, Dtype.ofArray(shardArray), new Shape(overlap.size()));
            pieces.add(
                    new Piece(
                            name,
                            shardArray,
                            overlap.shardOffset(),
                            overlap.shardOffset() + overlap.size()));
        }
    }

    /** Returns the file this snapshot is written to, relative to the checkpoint directory. */
    public String getFile() {
        return file;
    }

    /**
     * Writes the snapshot into a checkpoint directory (atomically: under a temporary name first),
     * then frees its copies. Called once.
     *
     * @param directory the checkpoint directory being written
     * @throws IOException if writing fails
     */
    public void write(Path directory) throws IOException {
        try (copies;
                SafetensorsWriter.StreamingFile out = writer.stream(directory.resolve(file))) {
            for (Piece piece : pieces) {
                try (NDArray slice =
                        piece.source().get(new NDIndex("{}:{}", piece.from(), piece.to()))) {
                    out.write(piece.name(), slice);
                }
            }
            out.commit();
        }
    }
}
