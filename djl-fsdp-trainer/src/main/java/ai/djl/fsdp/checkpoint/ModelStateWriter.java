package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Writes a sharded model's full state as one safetensors file, one FSDP unit at a time: each unit
 * is gathered alone, transformed, and the writing rank streams its tensors into their place in the
 * file, so no rank ever holds the whole model. The file appears (atomically) once every tensor is
 * in it.
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
     * Writes the state. A collective: every rank calls it; only the writing rank writes.
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
        SafetensorsWriter writer = new SafetensorsWriter().putMetadata("format", "pt");
        for (StateTransform.Entry entry : transform.declare()) {
            writer.declare(entry.name(), entry.dtype(), entry.shape());
        }
        try (SafetensorsWriter.StreamingFile out = writes ? writer.stream(file) : null) {
            units.forEachUnitGathered(
                    unit -> {
                        if (out != null) {
                            transform.transform(unit, out::write);
                        }
                    });
            if (out != null) {
                out.commit();
            }
        }
    }
}
