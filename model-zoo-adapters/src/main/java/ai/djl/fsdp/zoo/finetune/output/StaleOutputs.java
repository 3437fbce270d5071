package ai.djl.fsdp.zoo.finetune.output;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The hidden siblings a save uses: {@code .NAME.staging-HOST-PID-N} holds the new output while it
 * is written, {@code .NAME.previous-HOST-PID-N} the old one while the new one is moved in. A save
 * that dies leaves them behind; the next save removes those whose process on this host is gone. A
 * previous output left aside with no output in its place is put back, not deleted.
 */
final class StaleOutputs {

    static final String STAGING = ".staging-";
    static final String PREVIOUS = ".previous-";

    private StaleOutputs() {}

    /**
     * Creates a new, empty sibling directory named for this process.
     *
     * @param parent the output's parent directory
     * @param name the output's name
     * @param kind {@link #STAGING} or {@link #PREVIOUS}
     * @return the created directory
     * @throws IOException if it cannot be created
     */
    static Path newSibling(Path parent, String name, String kind) throws IOException {
        String prefix = '.' + name + kind + host() + '-' + ProcessHandle.current().pid() + '-';
        while (true) {
            Path sibling = parent.resolve(prefix + ThreadLocalRandom.current().nextInt(1 << 30));
            try {
                return Files.createDirectory(sibling);
            } catch (FileAlreadyExistsException e) {
                // another name
            }
        }
    }

    /**
     * Removes the staging and previous siblings of {@code name} left by saves of this host whose
     * process is gone; a previous output is moved back if nothing took its place.
     *
     * @param parent the output's parent directory
     * @param name the output's name
     * @return the siblings removed or restored
     * @throws IOException if the parent cannot be listed
     */
    static List<Path> clean(Path parent, String name) throws IOException {
        List<Path> cleaned = new ArrayList<>();
        Path target = parent.resolve(name);
        try (DirectoryStream<Path> siblings = Files.newDirectoryStream(parent, '.' + name + ".*")) {
            for (Path sibling : siblings) {
                String rest = sibling.getFileName().toString().substring(name.length() + 1);
                boolean staging = rest.startsWith(STAGING);
                if (!(staging || rest.startsWith(PREVIOUS))
                        || !Files.isDirectory(sibling, LinkOption.NOFOLLOW_LINKS)
                        || !writerIsGone(rest)) {
                    continue;
                }
                if (!staging && !Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                    Files.move(sibling, target, StandardCopyOption.ATOMIC_MOVE);
                    cleaned.add(sibling);
                } else if (deleteIfOurs(sibling)) {
                    cleaned.add(sibling);
                }
            }
        }
        return cleaned;
    }

    /**
     * Deletes an output moved aside by a save: a directory only if the tool wrote all of it (or it
     * is empty), anything else (a file {@code --overwrite_output_dir} replaced) always.
     *
     * @param previous the moved-aside output
     * @throws IOException if deleting fails
     */
    static void deletePrevious(Path previous) throws IOException {
        if (Files.isDirectory(previous, LinkOption.NOFOLLOW_LINKS)) {
            deleteIfOurs(previous);
        } else {
            Files.delete(previous);
        }
    }

    private static boolean deleteIfOurs(Path directory) throws IOException {
        if (!OutputMarker.ownsAll(directory) && !OutputMarker.entriesOf(directory).isEmpty()) {
            return false; // something in it is not the tool's: keep it
        }
        OutputDirectory.deleteTree(directory);
        return true;
    }

    /** Parses {@code KIND HOST-PID-N}: the writer is gone if HOST is this host and PID is dead. */
    private static boolean writerIsGone(String rest) {
        String suffix = rest.substring(rest.indexOf('-') + 1);
        int last = suffix.lastIndexOf('-');
        int pidStart = last <= 0 ? -1 : suffix.lastIndexOf('-', last - 1);
        if (pidStart <= 0) {
            return false;
        }
        try {
            long pid = Long.parseLong(suffix.substring(pidStart + 1, last));
            return suffix.substring(0, pidStart).equals(host())
                    && ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true);
        } catch (NumberFormatException e) {
            return false;
        }
    }

    static String host() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }
}
