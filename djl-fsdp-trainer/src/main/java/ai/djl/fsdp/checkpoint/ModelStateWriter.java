package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.safetensors.CheckpointShards;
import ai.djl.fsdp.safetensors.Dtype;
import ai.djl.fsdp.safetensors.SafetensorsWriter;
import ai.djl.fsdp.util.Failures;
import ai.djl.ndarray.NDArray;
import java.io.IOException;
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

    /**
     * Writes the state as one safetensors file. A collective: every rank calls it; only the writing
     * rank writes.
     *
     * @param units the sharded model's units
     * @param writes whether this rank writes the file (rank 0)
     * @param file the safetensors file to create or replace
     * @param transform what the state holds
     * @throws IOException if writing fails
     */
    public static void write(
            GatheredUnits units, boolean writes, Path file, StateTransform transform)
            throws IOException {
        List<String> names = new ArrayList<>();
        transform.declare().forEach(entry -> names.add(entry.name()));
        write(units, writes, transform, List.of(file), List.of(names));
    }

    /**
     * Writes the state as a Hugging Face checkpoint directory: one {@code model.safetensors} if it
     * fits in {@code maxShardBytes}, else numbered {@code model-0000N-of-0000M.safetensors} shards
     * (a tensor never split) and {@code model.safetensors.index.json}, written last; then the files
     * of the other layout an earlier save left in the directory are removed ({@link
     * CheckpointShards#removeStale}). A collective: every rank calls it; only the writing rank
     * writes.
     *
     * @param units the sharded model's units
     * @param writes whether this rank writes (rank 0)
     * @param directory the existing checkpoint directory
     * @param transform what the state holds
     * @param maxShardBytes the most tensor bytes one file holds
     * @throws IOException if writing fails
     */
    public static void writeCheckpoint(
            GatheredUnits units,
            boolean writes,
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
        write(units, writes, transform, files, shards);
        if (writes && shards.size() > 1) {
            long total = sizes.values().stream().mapToLong(Long::longValue).sum();
            CheckpointShards.writeIndex(directory, shards, total);
        }
        if (writes) {
            CheckpointShards.removeStale(directory, shards.size());
        }
    }

    private static void write(
            GatheredUnits units,
            boolean writes,
            StateTransform transform,
            List<Path> files,
            List<List<String>> namesByFile)
            throws IOException {
        Map<String, StateTransform.Entry> declared = new HashMap<>();
        transform.declare().forEach(entry -> declared.put(entry.name(), entry));
        List<SafetensorsWriter.StreamingFile> open = new ArrayList<>(files.size());
        Map<String, SafetensorsWriter.StreamingFile> fileOf = new HashMap<>();
        try {
            for (int i = 0; writes && i < files.size(); i++) {
                SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
                for (String name : namesByFile.get(i)) {
                    StateTransform.Entry entry = declared.get(name);
                    writer.declare(name, entry.dtype(), entry.shape());
                }
                SafetensorsWriter.StreamingFile out = writer.stream(files.get(i));
                open.add(out);
                namesByFile.get(i).forEach(name -> fileOf.put(name, out));
            }
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
            units.forEachUnitGathered(
                    unit -> {
                        if (writes) {
                            transform.transform(unit, sink);
                        }
                    });
            for (SafetensorsWriter.StreamingFile out : open) {
                out.commit();
            }
        } finally {
            // Closes every file (deleting those not committed), then throws the first failure.
            Failures.forEach(open, SafetensorsWriter.StreamingFile::close);
        }
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
