package ai.djl.fsdp.zoo.finetune.output;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * How a complete staging directory lands at the {@code --output_dir} ({@link OutputDirectory}):
 * swapped in whole for a previous output, or merged entry by entry into a directory of the user's;
 * either way what it replaces is kept aside until the move is done, and put back if it fails.
 */
final class OutputMoves {

    private OutputMoves() {}

    /**
     * Puts the staging directory at the target, keeping the old one aside until that is done and
     * its checkpoints have moved into the new one.
     */
    static void swapIn(Path staging, Path target) throws IOException {
        Path parent = target.getParent();
        Path previous = null;
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            previous =
                    StaleOutputs.newSibling(
                            parent, target.getFileName().toString(), StaleOutputs.PREVIOUS);
            Files.delete(previous);
            Files.move(target, previous, StandardCopyOption.ATOMIC_MOVE);
        }
        try {
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (previous != null) {
                Files.move(previous, target, StandardCopyOption.ATOMIC_MOVE);
            }
            throw e;
        }
        if (previous != null) {
            // The run's checkpoints (or the resumed run's) stay: they move into the new output
            // before the old one goes; if one cannot move, the old output is kept aside.
            for (Path checkpoint : CheckpointDirectory.list(previous)) {
                Files.move(
                        checkpoint,
                        target.resolve(checkpoint.getFileName()),
                        StandardCopyOption.ATOMIC_MOVE);
            }
            OutputMarker.write(target);
            StaleOutputs.deletePrevious(previous);
        }
    }

    /**
     * Moves each new entry into the existing target, replacing only entries of the same name; if a
     * move fails, the replaced entries are put back.
     */
    static void mergeInto(Path staging, Path target) throws IOException {
        Path replaced =
                StaleOutputs.newSibling(
                        target.getParent(), target.getFileName().toString(), StaleOutputs.PREVIOUS);
        List<String> entries = OutputMarker.entriesOf(staging);
        try {
            for (String entry : entries) {
                Path into = target.resolve(entry);
                if (Files.exists(into, LinkOption.NOFOLLOW_LINKS)) {
                    Files.move(into, replaced.resolve(entry), StandardCopyOption.ATOMIC_MOVE);
                }
                Files.move(staging.resolve(entry), into, StandardCopyOption.ATOMIC_MOVE);
            }
            Files.move(
                    staging.resolve(OutputMarker.FILE),
                    target.resolve(OutputMarker.FILE),
                    StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            for (String entry : OutputMarker.entriesOf(replaced)) {
                OutputDirectory.deleteTree(
                        target.resolve(entry)); // ours, moved in before the failure
                Files.move(replaced.resolve(entry), target.resolve(entry));
            }
            throw e;
        }
        OutputDirectory.deleteTree(replaced); // what --overwrite_output_dir allowed to replace
    }
}
