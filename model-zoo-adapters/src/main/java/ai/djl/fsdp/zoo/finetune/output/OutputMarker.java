package ai.djl.fsdp.zoo.finetune.output;

import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.safetensors.AtomicFiles;
import com.google.gson.Gson;
import com.google.gson.JsonParseException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The file that marks a directory as written by {@code bin/fsdp finetune}: it lists the entries the
 * tool wrote. A directory is a previous output of the tool, which a new run may replace, only if it
 * holds this file and nothing it does not list; anything else in it is the user's and is never
 * deleted.
 */
final class OutputMarker {

    /** The marker's file name, inside the output directory. */
    static final String FILE = ".djl-fsdp-output.json";

    private static final Gson GSON = new Gson();

    private String writtenBy = "djl-fsdp finetune";
    private List<String> entries = new ArrayList<>();

    private OutputMarker() {}

    /**
     * Writes the marker into a directory, listing the directory's entries as the tool's own.
     *
     * @param directory the directory the tool filled
     * @throws IOException if writing fails
     */
    static void write(Path directory) throws IOException {
        OutputMarker marker = new OutputMarker();
        marker.entries = entriesOf(directory);
        AtomicFiles.writeString(directory.resolve(FILE), GSON.toJson(marker));
    }

    /**
     * Returns whether a directory is the tool's output: every entry in it is one its marker lists,
     * or one of the tool's checkpoints (written during a run, before the marker).
     *
     * @param directory an existing directory
     * @return true if replacing it deletes only what the tool wrote
     * @throws IOException if the directory cannot be listed
     */
    static boolean ownsAll(Path directory) throws IOException {
        List<String> listed = List.of();
        Path file = directory.resolve(FILE);
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            try {
                OutputMarker marker =
                        GSON.fromJson(
                                Files.readString(file, StandardCharsets.UTF_8), OutputMarker.class);
                if (marker == null || marker.entries == null) {
                    return false;
                }
                listed = marker.entries;
            } catch (IOException | JsonParseException e) {
                return false;
            }
        }
        for (String entry : entriesOf(directory)) {
            if (!listed.contains(entry) && !isCheckpoint(directory.resolve(entry))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Returns whether a path is one of the tool's checkpoints: a complete {@code checkpoint-<step>}
     * directory, or the staging directory of one that was being written.
     *
     * @param path an entry of an output directory
     * @return true if the tool wrote it
     */
    static boolean isCheckpoint(Path path) {
        String name = path.getFileName().toString();
        if (CheckpointDirectory.step(path).isPresent()) {
            return CheckpointDirectory.isComplete(path);
        }
        return name.startsWith("." + CheckpointDirectory.PREFIX)
                && (name.endsWith(".incomplete") || name.endsWith(".previous"));
    }

    /** The names in a directory, except the marker itself. */
    static List<String> entriesOf(Path directory) throws IOException {
        try (Stream<Path> list = Files.list(directory)) {
            return list.map(p -> p.getFileName().toString())
                    .filter(name -> !FILE.equals(name))
                    .sorted()
                    .toList();
        }
    }
}
