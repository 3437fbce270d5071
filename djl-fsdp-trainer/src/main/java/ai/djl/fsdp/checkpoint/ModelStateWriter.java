package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.dist.ProcessGroup;
import ai.djl.fsdp.dist.ReduceOp;
import ai.djl.fsdp.safetensors.CheckpointShards;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a sharded model's full state as safetensors, one FSDP unit at a time: each unit is
 * gathered alone, transformed, and the writing rank streams its tensors from their own memory into
 * their place in the file that holds them, each cast to its declared type alone where it is held in
 * another, so no rank ever holds more than one unit (and the transform's copy of one tensor). Each
 * file appears (atomically) once every tensor of it is in.
 *
 * <p>Rank 0 writes; the others only take part in the gathers. Where rank 0 fails (opening a file,
 * the transform, committing), it keeps visiting every unit without writing, so the gathers stay in
 * step, and at the end the ranks agree: every rank then fails, rank 0 with its own exception, the
 * others with an {@link IOException} carrying its message, never waiting on a gather rank 0 left.
 */
public final class ModelStateWriter {

    /** Runs a visitor on each unit of a sharded model while that unit alone is gathered. */
    @FunctionalInterface
    public interface GatheredUnits {

        /**
         * Visits every unit (a collective).
         *
         * @param visitor what to run on each
         * @throws IOException if the visitor throws it
         */
        void forEachUnitGathered(UnitVisitor visitor) throws IOException;
    }

    private ModelStateWriter() {}

    /** A step of the writing rank's that may fail. */
    @FunctionalInterface
    private interface Step {
        void run() throws IOException;
    }

    /**
     * Writes the state as one safetensors file. A collective: every rank calls it; rank 0 writes.
     *
     * @param units the sharded model's units
     * @param group the ranks that call it; its rank 0 writes
     * @param file the safetensors file to create or replace
     * @param transform what the state holds
     * @throws IOException if writing fails on rank 0 (on every rank)
     */
    public static void write(
            GatheredUnits units, ProcessGroup group, Path file, StateTransform transform)
            throws IOException {
        List<String> names = new ArrayList<>();
        transform.declare().forEach(entry -> names.add(entry.name()));
        write(units, group, file, transform, List.of(file), List.of(names), () -> {});
    }

    /**
     * Writes the state as a Hugging Face checkpoint directory: one {@code model.safetensors} if it
     * fits in {@code maxShardBytes}, else numbered {@code model-0000N-of-0000M.safetensors} shards
     * (a tensor never split) and {@code model.safetensors.index.json}, written last; then the files
     * of the other layout an earlier save left in the directory are removed ({@link
     * CheckpointShards#removeStale}). A collective: every rank calls it; rank 0 writes.
     *
     * @param units the sharded model's units
     * @param group the ranks that call it; its rank 0 writes
     * @param directory the existing checkpoint directory
     * @param transform what the state holds
     * @param maxShardBytes the most tensor bytes one file holds
     * @throws IOException if writing fails on rank 0 (on every rank)
     */
    public static void writeCheckpoint(
            GatheredUnits units,
            ProcessGroup group,
            Path directory,
            StateTransform transform,
            long maxShardBytes)
            throws IOException {
        Map<String, Long> sizes = new LinkedHashMap<>();
        for (StateTransform.Entry entry : transform.declare()) {
            sizes.put(entry.name(), entry.shape().size() * entry.dtype().bytes());
        }
        List<List<String>> shards = CheckpointShards.plan(sizes, maxShardBytes);
        List<Path> files = new ArrayList<>(shards.size());
        for (int i = 0; i < shards.size(); i++) {
            files.add(directory.resolve(CheckpointShards.fileName(i, shards.size())));
        }
        write(
                units,
                group,
                directory,
                transform,
                files,
                shards,
                () -> {
                    if (shards.size() > 1) {
                        long total = sizes.values().stream().mapToLong(Long::longValue).sum();
                        CheckpointShards.writeIndex(directory, shards, total);
                    }
                    CheckpointShards.removeStale(directory, shards.size());
                });
    }

    /**
     * Writes the files (rank 0), then {@code finish} once they are committed, and has every rank
     * agree on the outcome.
     */
    private static void write(
            GatheredUnits units,
            ProcessGroup group,
            Path target,
            StateTransform transform,
            List<Path> files,
            List<List<String>> namesByFile,
            Step finish)
            throws IOException {
        boolean writes = group.getRank() == 0;
        Map<String, StateTransform.Entry> declared = new HashMap<>();
        transform.declare().forEach(entry -> declared.put(entry.name(), entry));
        List<SafetensorsWriter.StreamingFile> open = new ArrayList<>(files.size());
        Map<String, SafetensorsWriter.StreamingFile> fileOf = new HashMap<>();
        StateTransform.Sink sink =
                new StateTransform.Sink() {
                    @Override
                    public void put(String name, NDArray value) throws IOException {
                        write(fileFor(fileOf, name), declared.get(name), value);
                    }

                    @Override
                    public void putBytes(String name, NDArray bytes) throws IOException {
                        fileFor(fileOf, name).writeBytes(name, bytes);
                    }
                };
        // Rank 0's first failure: from then on it visits the units without writing.
        Exception[] failure = new Exception[1];
        try {
            if (writes) {
                failure[0] = attempt(() -> open(files, namesByFile, declared, open, fileOf));
            }
            units.forEachUnitGathered(
                    unit -> {
                        if (writes && failure[0] == null) {
                            failure[0] = attempt(() -> transform.transform(unit, sink));
                        }
                    });
            if (writes && failure[0] == null) {
                failure[0] =
                        attempt(
                                () -> {
                                    for (SafetensorsWriter.StreamingFile out : open) {
                                        out.commit();
                                    }
                                    finish.run();
                                });
            }
        } finally {
            // Closes every file, deleting those not committed.
            Exception closing =
                    attempt(() -> Failures.forEach(open, SafetensorsWriter.StreamingFile::close));
            if (closing != null) {
                failure[0] = Failures.suppress(failure[0], closing);
            }
        }
        agree(group, failure[0], target);
    }

    private static void open(
            List<Path> files,
            List<List<String>> namesByFile,
            Map<String, StateTransform.Entry> declared,
            List<SafetensorsWriter.StreamingFile> open,
            Map<String, SafetensorsWriter.StreamingFile> fileOf)
            throws IOException {
        for (int i = 0; i < files.size(); i++) {
            SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
            for (String name : namesByFile.get(i)) {
                StateTransform.Entry entry = declared.get(name);
                writer.declare(name, entry.dtype(), entry.shape());
            }
            SafetensorsWriter.StreamingFile out = writer.stream(files.get(i));
            open.add(out);
            namesByFile.get(i).forEach(name -> fileOf.put(name, out));
        }
    }

    /** Runs a step, returning its failure instead of throwing it (null if it succeeded). */
    private static Exception attempt(Step step) {
        try {
            step.run();
            return null;
        } catch (IOException | RuntimeException e) {
            return e;
        }
    }

    /**
     * Has every rank learn whether rank 0 failed (a collective): rank 0 then throws its own
     * failure, every other rank an {@link IOException} carrying rank 0's message.
     */
    private static void agree(ProcessGroup group, Exception failure, Path target)
            throws IOException {
        String own = failure == null ? "" : failure.getMessage();
        if (failure != null && (own == null || own.isEmpty())) {
            own = failure.toString();
        }
        byte[] message = own.getBytes(StandardCharsets.UTF_8);
        String received;
        try (NDManager scratch = NDManager.newBaseManager(group.getDevice())) {
            NDArray outcome = scratch.create(new int[] {failure == null ? 0 : 1, message.length});
            group.allReduce(outcome, ReduceOp.SUM);
            int[] summed = outcome.toIntArray();
            if (summed[0] == 0) {
                return;
            }
            ByteBuffer bytes = ByteBuffer.allocate(summed[1]);
            if (failure != null) {
                bytes.put(message).flip();
            }
            NDArray text = scratch.create(bytes, new Shape(summed[1]), DataType.UINT8);
            group.broadcast(text, 0);
            received = new String(text.toByteArray(), StandardCharsets.UTF_8);
        }
        if (failure instanceof IOException io) {
            throw io;
        }
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        throw new IOException(
                "Cannot write " + target + ": rank 0, which writes it, failed: " + received);
    }

    /**
     * Writes {@code value} in its declared type: itself, or (a floating tensor handed in another
     * floating type) a cast freed once written.
     */
    private static void write(
            SafetensorsWriter.StreamingFile file, StateTransform.Entry entry, NDArray value)
            throws IOException {
        Dtype type = Dtype.ofArray(value);
        if (type == entry.dtype()
                || !StateTransform.isFloat(type)
                || !StateTransform.isFloat(entry.dtype())) {
            file.write(entry.name(), value);
            return;
        }
        try (NDArray cast = entry.dtype().precision().cast(value)) {
            file.write(entry.name(), cast);
        }
    }

    private static SafetensorsWriter.StreamingFile fileFor(
            Map<String, SafetensorsWriter.StreamingFile> fileOf, String name) {
        SafetensorsWriter.StreamingFile file = fileOf.get(name);
        if (file == null) {
            throw new IllegalArgumentException("tensor \"" + name + "\" was not declared");
        }
        return file;
    }
}
