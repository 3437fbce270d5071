package ai.djl.fsdp.zoo.finetune;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Replaces a directory as a whole: its new contents are written into a staging sibling, which is
 * renamed into place only once complete, so a crash mid-write never leaves a half-written output
 * under the final name (at worst a stale staging directory beside it).
 */
final class OutputDirectory {

    /** What fills the staging directory. */
    interface Contents {
        void writeTo(Path directory) throws IOException;
    }

    private OutputDirectory() {}

    /**
     * Writes {@code contents} and puts them at {@code target}, replacing what was there.
     *
     * @param target the final directory
     * @param contents what to write into it
     * @throws IOException if writing or renaming fails
     */
    static void replace(Path target, Contents contents) throws IOException {
        Path absolute = target.toAbsolutePath().normalize();
        Path parent = absolute.getParent();
        Files.createDirectories(parent);
        String name = absolute.getFileName().toString();
        Path staging = Files.createTempDirectory(parent, "." + name + ".staging-");
        try {
            contents.writeTo(staging);
            Path previous = null;
            if (Files.exists(absolute)) {
                previous = Files.createTempDirectory(parent, "." + name + ".previous-");
                Files.delete(previous);
                Files.move(absolute, previous, StandardCopyOption.ATOMIC_MOVE);
            }
            Files.move(staging, absolute, StandardCopyOption.ATOMIC_MOVE);
            if (previous != null) {
                deleteTree(previous);
            }
        } finally {
            if (Files.exists(staging)) {
                deleteTree(staging);
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        List<Path> paths;
        try (Stream<Path> walk = Files.walk(root)) {
            paths = walk.sorted(Comparator.reverseOrder()).toList();
        }
        for (Path path : paths) {
            Files.delete(path);
        }
    }
}
