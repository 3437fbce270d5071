package ai.djl.fsdp.checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The files of a sharded checkpoint and where checkpoints live in an output directory, as Hugging
 * Face's Trainer lays them out: {@code output_dir/checkpoint-<step>/}. A checkpoint is complete
 * once its {@value #COMPLETE} marker exists; it is written under a temporary name and renamed into
 * place only then, so a process killed while saving leaves the previous one valid.
 */
public final class CheckpointDirectory {

    /** The metadata file: every tensor's name, type, shape and where its elements lie. */
    public static final String METADATA = "metadata.json";

    /** The trainer's state: steps, update counts, the caller's own state. */
    public static final String TRAINER_STATE = "trainer_state.json";

    /** The marker written last: the checkpoint is whole. */
    public static final String COMPLETE = "COMPLETE";

    /** The prefix of a checkpoint directory's name, followed by its optimizer step. */
    public static final String PREFIX = "checkpoint-";

    private static final Pattern NAME = Pattern.compile("checkpoint-(\\d{1,18})");

    private CheckpointDirectory() {}

    /**
     * Returns the name of a rank's shard file.
     *
     * @param rank the rank
     * @param worldSize the number of ranks that wrote the checkpoint
     * @return the file name
     */
    public static String shardFile(int rank, int worldSize) {
        return String.format(Locale.ROOT, "rank-%05d-of-%05d.safetensors", rank, worldSize);
    }

    /**
     * Returns the directory of the checkpoint of a step under an output directory.
     *
     * @param outputDir the output directory
     * @param step the optimizer step
     * @return {@code outputDir/checkpoint-<step>}
     */
    public static Path of(Path outputDir, long step) {
        return outputDir.resolve(PREFIX + step);
    }

    /**
     * Returns whether a directory holds a complete checkpoint.
     *
     * @param directory the directory
     * @return whether its marker exists
     */
    public static boolean isComplete(Path directory) {
        return Files.isRegularFile(directory.resolve(COMPLETE));
    }

    /**
     * Returns the complete checkpoints under an output directory, oldest first.
     *
     * @param outputDir the output directory
     * @return their directories, by step
     */
    public static List<Path> list(Path outputDir) {
        if (!Files.isDirectory(outputDir)) {
            return List.of();
        }
        try (Stream<Path> children = Files.list(outputDir)) {
            List<Path> checkpoints = new ArrayList<>();
            children.filter(path -> step(path).isPresent() && isComplete(path))
                    .forEach(checkpoints::add);
            checkpoints.sort(Comparator.comparingLong(path -> step(path).orElseThrow()));
            return checkpoints;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot list the checkpoints in " + outputDir, e);
        }
    }

    /**
     * Returns the newest complete checkpoint under an output directory.
     *
     * @param outputDir the output directory
     * @return its directory, or empty when there is none
     */
    public static Optional<Path> newest(Path outputDir) {
        List<Path> checkpoints = list(outputDir);
        return checkpoints.isEmpty()
                ? Optional.empty()
                : Optional.of(checkpoints.get(checkpoints.size() - 1));
    }

    /**
     * Deletes the oldest complete checkpoints so that the newest {@code keep} remain, never {@code
     * justWritten} (a resumed run may write a checkpoint older than one a previous run left);
     * nothing but complete {@code checkpoint-<step>} directories (this project's own output) is
     * touched.
     *
     * @param outputDir the output directory
     * @param keep how many to keep, at least 1
     * @param justWritten the checkpoint just saved, kept whatever its step; null for none
     * @return the deleted directories
     * @throws IOException if deleting fails
     */
    public static List<Path> keepNewest(Path outputDir, int keep, Path justWritten)
            throws IOException {
        List<Path> checkpoints = new ArrayList<>(list(outputDir));
        if (justWritten != null) {
            checkpoints.removeIf(
                    path -> path.toAbsolutePath().equals(justWritten.toAbsolutePath()));
            keep = Math.max(1, keep) - 1;
        }
        List<Path> deleted = new ArrayList<>();
        for (int i = 0; i < checkpoints.size() - Math.max(0, keep); i++) {
            Path directory = checkpoints.get(i);
            // Renamed away first: a deletion cut short leaves a hidden directory, never one that
            // carries a checkpoint's name with files missing.
            Path doomed = directory.resolveSibling("." + directory.getFileName() + ".deleting");
            if (Files.exists(doomed)) {
                deleteTree(doomed); // left by a deletion that was cut short
            }
            Files.move(directory, doomed, StandardCopyOption.ATOMIC_MOVE);
            deleteTree(doomed);
            deleted.add(directory);
        }
        return deleted;
    }

    /**
     * Returns the step of a checkpoint directory's name.
     *
     * @param directory a directory
     * @return its step, or empty when it is not named {@code checkpoint-<step>}
     */
    public static Optional<Long> step(Path directory) {
        Matcher matcher = NAME.matcher(String.valueOf(directory.getFileName()));
        if (!matcher.matches()) {
            return Optional.empty();
        }
        try {
            return Optional.of(Long.parseLong(matcher.group(1)));
        } catch (NumberFormatException e) {
            return Optional.empty(); // more digits than a step has: not ours
        }
    }

    /**
     * Deletes a directory this project wrote, with everything in it.
     *
     * @param directory the directory
     * @throws IOException if deleting fails
     */
    public static void deleteTree(Path directory) throws IOException {
        try (Stream<Path> walk = Files.walk(directory)) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
