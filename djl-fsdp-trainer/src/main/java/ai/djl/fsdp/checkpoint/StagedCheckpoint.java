package ai.djl.fsdp.checkpoint;

import ai.djl.fsdp.safetensors.AtomicFiles;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One save's files on disk: the hidden staging directory {@code .<name>.incomplete} next to the
 * target, each rank's part with its {@code .done} (or {@code .failed}) marker, and rank 0's
 * completion, which waits for every marker, adds the metadata, the trainer's state and the
 * completeness marker, and renames the directory into place. A process killed at any moment leaves
 * the target either absent or complete.
 */
final class StagedCheckpoint {

    private static final String DONE_SUFFIX = ".done";
    private static final String FAILED_SUFFIX = ".failed";

    private final Path target;
    private final Path staging;
    private final Path previous;

    /** Writes one rank's part into the staging directory. */
    @FunctionalInterface
    interface Part {
        void writeTo(Path staging) throws IOException;
    }

    /** The staging of a save into {@code directory}. */
    StagedCheckpoint(Path directory) {
        target = directory.toAbsolutePath().normalize();
        staging = target.resolveSibling("." + target.getFileName() + ".incomplete");
        previous = target.resolveSibling("." + target.getFileName() + ".previous");
    }

    /** The checkpoint directory this save completes into. */
    Path getTarget() {
        return target;
    }

    /**
     * Rank 0: creates an empty staging directory, deleting one a cut-short save left behind, and
     * settles a {@code .<name>.previous} one left (see {@link #settlePrevious()}).
     */
    void prepare() throws IOException {
        Files.createDirectories(target.getParent());
        settlePrevious();
        if (Files.exists(staging)) {
            // A save of this same directory that was cut short; every rank is past it.
            CheckpointDirectory.deleteTree(staging);
        }
        Files.createDirectories(staging);
    }

    /**
     * Settles the {@code .<name>.previous} a replacing save cut short left, which would stop this
     * save's own replacement: with the target complete it is an old copy whose deletion was cut
     * short, and goes; with the target missing it was cut short between its two renames and is the
     * only copy, so it is moved back. Anything else is left alone, an error naming it.
     */
    private void settlePrevious() throws IOException {
        if (!Files.exists(previous)) {
            return;
        }
        if (CheckpointDirectory.isComplete(target)) {
            CheckpointDirectory.deleteTree(previous);
        } else if (!Files.exists(target) && CheckpointDirectory.isComplete(previous)) {
            move(previous, target);
        } else {
            throw new IOException(
                    previous
                            + " is left from a save that was cut short, and "
                            + target
                            + (Files.exists(target)
                                    ? " is not a complete checkpoint"
                                    : " does not exist")
                            + ": neither is touched. Move "
                            + previous
                            + " away (or delete it if it is not needed), then save again");
        }
    }

    /** Writes this rank's file and marks it done, or marks it failed so rank 0 stops waiting. */
    void writeShard(ShardSnapshot snapshot) throws IOException {
        if (snapshot != null) {
            writePart(snapshot.getFile(), snapshot::write);
        }
    }

    /**
     * Writes one rank's part, the file {@code file}, and marks it done; if that fails, marks it
     * failed so rank 0 stops waiting, and throws the failure (a marker that cannot be written
     * suppressed onto it).
     */
    void writePart(String file, Part part) throws IOException {
        try {
            part.writeTo(staging);
            Files.createFile(staging.resolve(file + DONE_SUFFIX));
        } catch (IOException | RuntimeException e) {
            IOException failure =
                    new IOException(
                            "Cannot save the checkpoint " + target + ": " + e.getMessage(), e);
            try {
                Files.deleteIfExists(staging.resolve(file + FAILED_SUFFIX));
                Files.createFile(staging.resolve(file + FAILED_SUFFIX));
            } catch (IOException | RuntimeException marker) {
                failure.addSuppressed(marker);
            }
            throw failure;
        }
    }

    /**
     * Rank 0: waits up to {@code timeout} for every rank's file, then completes the checkpoint,
     * renames it into place and, with {@code keepNewest > 0}, deletes the oldest beyond that many.
     */
    void complete(
            CheckpointMetadata metadata,
            String stateJson,
            int writers,
            int keepNewest,
            Duration timeout)
            throws IOException {
        List<Path> done = new ArrayList<>();
        for (int rank = 0; rank < writers; rank++) {
            done.add(staging.resolve(CheckpointDirectory.shardFile(rank, writers) + DONE_SUFFIX));
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Path marker : done) {
            Path failed =
                    marker.resolveSibling(
                            marker.getFileName().toString().replace(DONE_SUFFIX, FAILED_SUFFIX));
            while (!Files.exists(marker)) {
                if (Files.exists(failed)) {
                    throw new IOException(
                            failed.getFileName() + ": that rank could not write its part");
                }
                if (System.nanoTime() > deadline) {
                    throw new IOException(
                            "rank files missing after "
                                    + timeout
                                    + ": "
                                    + marker.getFileName()
                                    + " (a rank failed or cannot see "
                                    + staging
                                    + "; checkpoints need a directory every rank shares)");
                }
                sleep();
            }
        }
        metadata.locateBytes(staging);
        AtomicFiles.writeString(staging.resolve(CheckpointDirectory.METADATA), metadata.toJson());
        AtomicFiles.writeString(staging.resolve(CheckpointDirectory.TRAINER_STATE), stateJson);
        for (Path marker : done) {
            Files.delete(marker);
        }
        AtomicFiles.writeString(staging.resolve(CheckpointDirectory.COMPLETE), "");
        if (Files.exists(target)) {
            if (!CheckpointDirectory.isComplete(target)) {
                throw new IOException(
                        target + " exists and is not a checkpoint of this tool: not replaced");
            }
            move(target, previous);
            move(staging, target);
            CheckpointDirectory.deleteTree(previous);
        } else {
            move(staging, target);
        }
        if (keepNewest > 0) {
            CheckpointDirectory.keepNewest(target.getParent(), keepNewest, target);
        }
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to);
        }
    }

    private static void sleep() throws IOException {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("Interrupted while waiting for the ranks' files", e);
        }
    }
}
