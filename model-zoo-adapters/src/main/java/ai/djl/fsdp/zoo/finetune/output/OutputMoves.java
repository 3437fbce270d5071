package ai.djl.fsdp.zoo.finetune.output;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.safetensors.CheckpointShards;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * How a complete staging directory lands at the {@code --output_dir} ({@link OutputDirectory}):
 * swapped in whole for a previous output, or merged entry by entry into a directory of the user's;
 * either way what it replaces is kept aside until the move is done, and put back if it fails (a
 * merge also removes the entries it had moved in).
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
     * Moves each new entry into the existing target, replacing only entries of the same name and,
     * when new weights come, the weights files of the other layout ({@link
     * CheckpointShards#isWeightsFile}), the replaced ones kept aside in a sibling until the move is
     * done; if it fails part way, it is undone ({@link #undo}).
     *
     * @throws NotUndone if the move failed and could not be undone in full
     */
    static void mergeInto(Path staging, Path target) throws IOException {
        Path replaced =
                StaleOutputs.newSibling(
                        target.getParent(), target.getFileName().toString(), StaleOutputs.PREVIOUS);
        List<String> entries = OutputMarker.entriesOf(staging);
        List<String> movedIn = new ArrayList<>();
        List<String> movedAside = new ArrayList<>();
        try {
            // New weights replace the old ones whole: a file of the other layout (an index and
            // its shards for one model.safetensors, or the reverse) left beside them would be read
            // in their place.
            for (String entry : staleWeights(target, entries)) {
                Files.move(
                        target.resolve(entry),
                        replaced.resolve(entry),
                        StandardCopyOption.ATOMIC_MOVE);
                movedAside.add(entry);
            }
            for (String entry : entries) {
                Path into = target.resolve(entry);
                if (Files.exists(into, LinkOption.NOFOLLOW_LINKS)) {
                    Files.move(into, replaced.resolve(entry), StandardCopyOption.ATOMIC_MOVE);
                    movedAside.add(entry);
                }
                Files.move(staging.resolve(entry), into, StandardCopyOption.ATOMIC_MOVE);
                movedIn.add(entry);
            }
            Files.move(
                    staging.resolve(OutputMarker.FILE),
                    target.resolve(OutputMarker.FILE),
                    StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            undo(target, replaced, movedIn, movedAside, e);
            throw e;
        }
        OutputDirectory.deleteTree(replaced); // what --overwrite_output_dir allowed to replace
    }

    /** The weights files in {@code target} of a layout the new {@code entries} do not write. */
    private static List<String> staleWeights(Path target, List<String> entries) throws IOException {
        List<String> stale = new ArrayList<>();
        if (entries.stream().noneMatch(CheckpointShards::isWeightsFile)) {
            return stale;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(target)) {
            for (Path file : files) {
                String name = file.getFileName().toString();
                if (CheckpointShards.isWeightsFile(name) && !entries.contains(name)) {
                    stale.add(name);
                }
            }
        }
        return stale;
    }

    /**
     * Undoes a merge that failed part way: removes the entries it moved in (all the tool's own),
     * moves the ones they replaced back, and deletes the then empty sibling. Nothing that was in
     * the target before is deleted: an entry that cannot go back stays in the sibling.
     *
     * @throws NotUndone naming the failure and where the replaced entries are, if a step failed
     */
    private static void undo(
            Path target,
            Path replaced,
            List<String> movedIn,
            List<String> movedAside,
            IOException failure)
            throws NotUndone {
        List<IOException> problems = new ArrayList<>();
        for (String entry : movedIn) {
            try {
                OutputDirectory.deleteTree(target.resolve(entry));
            } catch (IOException e) {
                problems.add(e);
            }
        }
        for (String entry : movedAside) {
            try {
                Files.move(
                        replaced.resolve(entry),
                        target.resolve(entry),
                        StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                problems.add(e);
            }
        }
        try {
            Files.delete(replaced);
        } catch (IOException e) {
            problems.add(e);
        }
        if (!problems.isEmpty()) {
            NotUndone notUndone =
                    new NotUndone(
                            OutputDirectory.reason(failure)
                                    + "; undoing the move failed too ("
                                    + OutputDirectory.reason(problems.get(0))
                                    + "): "
                                    + target
                                    + " may hold some of the new files, and what they replaced"
                                    + " is kept in "
                                    + replaced);
            notUndone.addSuppressed(failure);
            problems.forEach(notUndone::addSuppressed);
            throw notUndone;
        }
    }

    /** A failed merge that could not be undone in full; the message says what is left where. */
    static final class NotUndone extends IOException {

        private static final long serialVersionUID = 1L;

        NotUndone(String message) {
            super(message);
        }
    }
}
