package ai.djl.fsdp.zoo.finetune.output;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The {@code --output_dir} of a run. {@link #check} runs before training and refuses what a save
 * would destroy or could not write; {@link #replace} writes the new contents into a staging sibling
 * and only then puts them at the target, so a crash mid-write never leaves a half-written output
 * under the final name.
 *
 * <p>Only a previous output of the tool (see {@link OutputMarker}) is replaced as a whole. A
 * regular file, the current directory and a directory holding anything the tool did not write are
 * refused unless {@code --overwrite_output_dir} is given; with it, as in Hugging Face, the new
 * files are written into the directory and replace only the entries of the same names.
 */
public final class OutputDirectory {

    /** The flag that allows writing over what is not a previous output. */
    public static final String OVERWRITE_FLAG = "--overwrite_output_dir";

    /** Less free space than this on the target's file system is a full disk. */
    static final long MIN_FREE_BYTES = 1L << 20;

    private static final String FLAG = "--output_dir";

    /** What fills the staging directory. */
    public interface Contents {
        void writeTo(Path directory) throws IOException;
    }

    private final Path target;
    private final boolean overwrite;

    private OutputDirectory(Path target, boolean overwrite) {
        this.target = target;
        this.overwrite = overwrite;
    }

    /**
     * Checks, before any work, that a run may write its output at {@code target}: creates missing
     * parent directories (as Hugging Face does), refuses to replace what is not the tool's output
     * unless {@code overwrite}, and tries a write beside the target.
     *
     * @param target the {@code --output_dir}
     * @param overwrite whether {@code --overwrite_output_dir} was given
     * @return the output directory, to {@link #replace} once the run is done
     * @throws IllegalArgumentException if the target must not be written without {@code
     *     --overwrite_output_dir}
     * @throws IOException if the target cannot be written, naming the path and the reason
     */
    public static OutputDirectory check(Path target, boolean overwrite) throws IOException {
        OutputDirectory output = new OutputDirectory(resolve(target), overwrite);
        boolean merge = output.mergesIntoExisting();
        Path parent = output.target.getParent();
        Path existing = parent;
        while (!Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (!Files.isDirectory(existing)) {
            throw new IOException(
                    FLAG
                            + " "
                            + output.target
                            + ": "
                            + existing
                            + " is a file, not a directory: pass another "
                            + FLAG);
        }
        try {
            Files.createDirectories(parent);
            Files.delete(Files.createTempFile(parent, "." + output.name() + ".probe-", null));
            if (merge) {
                Files.delete(Files.createTempFile(output.target, OutputMarker.FILE, ".probe"));
            }
        } catch (IOException e) {
            throw output.failure("cannot write there", e);
        }
        long free = Files.getFileStore(parent).getUsableSpace();
        if (free < MIN_FREE_BYTES) {
            throw new IOException(
                    FLAG
                            + " "
                            + output.target
                            + ": its file system is full ("
                            + free
                            + " bytes free): free space there or pass another "
                            + FLAG);
        }
        return output;
    }

    /**
     * Returns where the output goes.
     *
     * @return the absolute target
     */
    public Path target() {
        return target;
    }

    /**
     * Writes {@code contents} into a staging sibling and puts them at the target: a previous output
     * (or nothing) is replaced as a whole; with {@code --overwrite_output_dir}, existing entries of
     * the same names are replaced and the rest kept. Stale staging directories of earlier runs that
     * died are removed first.
     *
     * @param contents what to write
     * @throws IOException if writing fails, naming the path and the reason; the target is then
     *     unchanged
     */
    public void replace(Contents contents) throws IOException {
        Path parent = target.getParent();
        StaleOutputs.clean(parent, name());
        boolean merge = mergesIntoExisting(); // again: the target may have changed while training
        Path staging;
        try {
            staging = StaleOutputs.newSibling(parent, name(), StaleOutputs.STAGING);
        } catch (IOException e) {
            throw failure("cannot create a staging directory", e);
        }
        try {
            OutputMarker.write(staging); // marks the staging directory as ours from the start
            contents.writeTo(staging);
            OutputMarker.write(staging);
            if (merge) {
                OutputMoves.mergeInto(staging, target);
            } else {
                OutputMoves.swapIn(staging, target);
            }
        } catch (IOException e) {
            throw failure("the model was not saved", e);
        } finally {
            if (Files.exists(staging)) {
                deleteTree(staging);
            }
        }
    }

    /**
     * Returns where a file the run writes as it goes (its metrics log) lives meanwhile, so it can
     * be followed: inside the target only where that changes nothing the target holds now, that is
     * when the target is absent or an empty directory (created and marked as the tool's), or when
     * the run resumes from a checkpoint in it; and never over an entry of the user's. Else null:
     * the file is written elsewhere and comes with the output at the end, so a previous output
     * stays whole until the new one is complete.
     *
     * @param name the file's name
     * @param resuming whether the run resumes from a checkpoint inside the target
     * @return the path, or null
     * @throws IOException if the target cannot be created or marked
     */
    public Path liveEntry(String name, boolean resuming) throws IOException {
        Path entry = target.resolve(name);
        boolean merge = mergesIntoExisting();
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)
                && !(Files.isDirectory(target) && (resuming || isEmpty(target)))) {
            return null; // a previous output or a file, replaced only once the run is complete
        }
        if (merge) {
            return Files.exists(entry, LinkOption.NOFOLLOW_LINKS) ? null : entry;
        }
        Files.createDirectories(target);
        if (!Files.exists(entry, LinkOption.NOFOLLOW_LINKS)) {
            Files.createFile(entry);
        }
        OutputMarker.write(target); // everything in it is the tool's, the new entry too
        return entry;
    }

    /**
     * Classifies the target: false if it is absent or replaceable as a whole, true if the new files
     * go into it (allowed only with {@code --overwrite_output_dir}).
     */
    private boolean mergesIntoExisting() throws IOException {
        if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        String refusal;
        if (Path.of("").toAbsolutePath().startsWith(target)) {
            refusal = "is the current directory (or holds it)";
        } else if (!Files.isDirectory(target)) {
            if (!overwrite) {
                throw refuse("is an existing file, not a directory");
            }
            return false; // the file is replaced by the directory
        } else if (isEmpty(target) || OutputMarker.ownsAll(target)) {
            return false;
        } else {
            refusal = "holds files this tool did not write";
        }
        if (!overwrite) {
            throw refuse(refusal);
        }
        return true;
    }

    private String name() {
        return target.getFileName().toString();
    }

    private IllegalArgumentException refuse(String problem) {
        return new IllegalArgumentException(
                FLAG
                        + " "
                        + target
                        + " "
                        + problem
                        + ": pass a new or empty directory, or add "
                        + OVERWRITE_FLAG
                        + " to write the model's files into it (files of the same names are"
                        + " replaced, others kept)");
    }

    private IOException failure(String what, IOException cause) {
        IOException failure =
                new IOException(
                        FLAG
                                + " "
                                + target
                                + ": "
                                + what
                                + ": "
                                + reason(cause)
                                + ". Fix that or pass another "
                                + FLAG
                                + (cause instanceof OutputMoves.NotUndone
                                        ? ""
                                        : "; nothing at " + target + " was changed"));
        failure.addSuppressed(cause); // kept for --stacktrace, not repeated in the message
        return failure;
    }

    /** The reason of a failed file operation, with the path it concerns, in words. */
    static String reason(IOException e) {
        if (e instanceof FileSystemException fs && fs.getFile() != null) {
            String why = fs.getReason();
            if (why == null) {
                why =
                        switch (e.getClass().getSimpleName()) {
                            case "AccessDeniedException" -> "permission denied";
                            case "NoSuchFileException" -> "no such file or directory";
                            case "FileAlreadyExistsException" -> "it already exists";
                            case "NotDirectoryException" -> "not a directory";
                            case "DirectoryNotEmptyException" -> "directory not empty";
                            default -> e.getClass().getSimpleName();
                        };
            }
            return why + " (" + fs.getFile() + ")";
        }
        return e.getMessage() != null ? e.getMessage() : e.toString();
    }

    /** The absolute, normalized target; an existing symbolic link is followed. */
    private static Path resolve(Path target) throws IOException {
        Path absolute = target.toAbsolutePath().normalize();
        if (absolute.getParent() == null) {
            throw new IllegalArgumentException(
                    FLAG + " " + target + " is the root directory: pass a directory to create");
        }
        try {
            return Files.isSymbolicLink(absolute) ? absolute.toRealPath() : absolute;
        } catch (NoSuchFileException e) {
            return absolute; // a dangling link: replaced like a file
        }
    }

    private static boolean isEmpty(Path directory) throws IOException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
            return !entries.iterator().hasNext();
        }
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        List<Path> paths;
        try (Stream<Path> walk = Files.walk(root)) {
            paths = walk.sorted(Comparator.reverseOrder()).toList();
        }
        for (Path path : paths) {
            Files.delete(path);
        }
    }
}
