package ai.djl.fsdp.zoo.finetune.output;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --output_dir} with real files: nothing the tool did not write is deleted, what would be is
 * refused before training unless {@code --overwrite_output_dir}, unwritable and full destinations
 * are found before training, and a failed save names the path and the reason.
 */
class OutputDirectoryTest {

    @TempDir Path dir;

    /** Writes a small model: a config and a weights file. */
    private static void model(Path directory, String weights) throws IOException {
        Files.writeString(directory.resolve("config.json"), "{}");
        Files.writeString(directory.resolve("model.safetensors"), weights);
    }

    private static void save(Path target, boolean overwrite, String weights) throws IOException {
        OutputDirectory.check(target, overwrite).replace(d -> model(d, weights));
    }

    private static List<String> names(Path directory) throws IOException {
        try (Stream<Path> list = Files.list(directory)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void createsMissingParentsAndMarksTheOutput() throws IOException {
        Path target = dir.resolve("runs/exp1/out");
        save(target, false, "v1");
        assertEquals(List.of(OutputMarker.FILE, "config.json", "model.safetensors"), names(target));
        assertEquals(List.of("out"), names(target.getParent()), "no staging directory is left");
    }

    @Test
    void replacesItsOwnPreviousOutputAsAWhole() throws IOException {
        Path target = dir.resolve("out");
        save(target, false, "v1");
        Files.writeString(target.resolve("model.safetensors"), "v1"); // still the tool's entry
        OutputDirectory.check(target, false)
                .replace(d -> Files.writeString(d.resolve("adapter.safetensors"), "v2"));
        assertEquals(List.of(OutputMarker.FILE, "adapter.safetensors"), names(target));
        assertEquals(List.of("out"), names(dir));
    }

    @Test
    void aLiveLogGoesInTheTargetOnlyWhereItChangesNothingThere() throws IOException {
        Path fresh = dir.resolve("fresh");
        assertEquals(
                fresh.resolve("metrics.jsonl"),
                OutputDirectory.check(fresh, false).liveEntry("metrics.jsonl", false),
                "a new output: followed there");
        Path target = dir.resolve("out");
        OutputDirectory.check(target, false)
                .replace(
                        d -> {
                            model(d, "v1");
                            Files.writeString(d.resolve("metrics.jsonl"), "{\"step\": 1}\n");
                        });
        assertEquals(
                null,
                OutputDirectory.check(target, false).liveEntry("metrics.jsonl", false),
                "a new run over a previous output: elsewhere until it is complete");
        assertEquals("{\"step\": 1}\n", Files.readString(target.resolve("metrics.jsonl")));
        assertEquals(
                target.resolve("metrics.jsonl"),
                OutputDirectory.check(target, false).liveEntry("metrics.jsonl", true),
                "a run resuming from a checkpoint in it goes on there");
    }

    @Test
    void refusesARegularFileUnlessOverwrite() throws IOException {
        Path file = dir.resolve("notes.txt");
        Files.writeString(file, "the user's notes");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> save(file, false, "v1"));
        assertEquals(
                "--output_dir "
                        + file
                        + " is an existing file, not a directory: pass a new or empty directory,"
                        + " or add --overwrite_output_dir to write the model's files into it (files"
                        + " of the same names are replaced, others kept)",
                e.getMessage());
        assertEquals("the user's notes", Files.readString(file));
        save(file, true, "v1");
        assertTrue(Files.isRegularFile(file.resolve("model.safetensors")));
    }

    @Test
    void refusesTheCurrentDirectoryAndItsParents() throws IOException {
        List<String> before = names(Path.of(""));
        for (String target : List.of(".", "", "..")) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> OutputDirectory.check(Path.of(target), false));
            assertTrue(e.getMessage().contains("is the current directory"), e.getMessage());
            assertTrue(e.getMessage().contains("--overwrite_output_dir"), e.getMessage());
        }
        assertEquals(before, names(Path.of("")), "nothing was written into the current directory");
    }

    @Test
    void keepsAUsersFilesAndWritesIntoThemOnlyWithOverwrite() throws IOException {
        Path target = dir.resolve("mine");
        Files.createDirectories(target);
        Files.writeString(target.resolve("thesis.tex"), "years of work");
        Files.writeString(target.resolve("config.json"), "the user's config");
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> save(target, false, "v1"));
        assertTrue(e.getMessage().contains("holds files this tool did not write"));
        assertEquals(List.of("config.json", "thesis.tex"), names(target));

        save(target, true, "v1");
        assertEquals("years of work", Files.readString(target.resolve("thesis.tex")));
        assertEquals("{}", Files.readString(target.resolve("config.json")), "same name replaced");
        // The directory still holds the user's file: the next run needs the flag again.
        assertThrows(IllegalArgumentException.class, () -> save(target, false, "v2"));
        save(target, true, "v2");
        assertEquals("v2", Files.readString(target.resolve("model.safetensors")));
        assertEquals("years of work", Files.readString(target.resolve("thesis.tex")));
        assertEquals(List.of("mine"), names(dir));
    }

    /**
     * Weights merged into a directory that holds the other layout (an index and its shards) replace
     * them whole: a reader would otherwise take the old index's shards. The user's files stay.
     */
    @Test
    void mergedWeightsReplaceTheOtherLayoutWhole() throws IOException {
        Path target = dir.resolve("mine");
        Files.createDirectories(target);
        Files.writeString(target.resolve("thesis.tex"), "years of work");
        Files.writeString(target.resolve("model.safetensors.index.json"), "old index");
        Files.writeString(target.resolve("model-00001-of-00002.safetensors"), "old shard");
        Files.writeString(target.resolve("model-00002-of-00002.safetensors"), "old shard");
        save(target, true, "v1");
        assertEquals(
                List.of(OutputMarker.FILE, "config.json", "model.safetensors", "thesis.tex"),
                names(target));
        assertEquals("v1", Files.readString(target.resolve("model.safetensors")));
        assertEquals(List.of("mine"), names(dir), "no replaced sibling is left");
    }

    /**
     * A merge into a user's directory that fails part way (here its last move: the marker's name is
     * the user's directory, which a rename cannot replace, whoever runs it) is undone: the new
     * entries go, the replaced one comes back, no sibling is left, and the error says so.
     */
    @Test
    void aMergeThatFailsPartWayLeavesTheDirectoryAsItWas() throws IOException {
        Path target = dir.resolve("mine");
        Files.createDirectories(target.resolve(OutputMarker.FILE));
        Files.writeString(target.resolve(OutputMarker.FILE).resolve("notes"), "the user's");
        Files.writeString(target.resolve("config.json"), "the user's config");
        Files.writeString(target.resolve("thesis.tex"), "years of work");
        IOException e = assertThrows(IOException.class, () -> save(target, true, "v1"));
        assertTrue(
                e.getMessage().startsWith("--output_dir " + target + ": the model was not saved"),
                e.getMessage());
        assertTrue(
                e.getMessage().endsWith("nothing at " + target + " was changed"), e.getMessage());
        assertEquals(List.of(OutputMarker.FILE, "config.json", "thesis.tex"), names(target));
        assertEquals("the user's config", Files.readString(target.resolve("config.json")));
        assertEquals("years of work", Files.readString(target.resolve("thesis.tex")));
        assertEquals(
                "the user's", Files.readString(target.resolve(OutputMarker.FILE).resolve("notes")));
        assertEquals(List.of("mine"), names(dir), "no staging or replaced sibling is left");
    }

    @Test
    void aFileAddedToAnOutputIsTheUsers() throws IOException {
        Path target = dir.resolve("out");
        save(target, false, "v1");
        Files.writeString(target.resolve("eval.txt"), "the user's evaluation");
        assertThrows(IllegalArgumentException.class, () -> save(target, false, "v2"));
        save(target, true, "v2");
        assertEquals("the user's evaluation", Files.readString(target.resolve("eval.txt")));
    }

    @Test
    void refusesAParentThatIsAFile() throws IOException {
        Path file = dir.resolve("data.txt");
        Files.writeString(file, "text");
        IOException e =
                assertThrows(
                        IOException.class, () -> OutputDirectory.check(file.resolve("out"), false));
        assertTrue(
                e.getMessage().startsWith("--output_dir " + file.resolve("out")), e.getMessage());
        assertTrue(e.getMessage().contains(file + " is a file, not a directory"), e.getMessage());
        assertEquals("text", Files.readString(file));
    }

    @Test
    void findsAReadOnlyDestinationBeforeTraining() throws IOException, InterruptedException {
        Path readOnly = dir.resolve("ro");
        Files.createDirectories(readOnly);
        try (SmallFileSystem fs = SmallFileSystem.mount(readOnly, "ro,size=1m")) {
            if (fs == null) {
                Files.setPosixFilePermissions(
                        readOnly, PosixFilePermissions.fromString("r-xr-xr-x"));
                Assumptions.assumeFalse(
                        Files.isWritable(readOnly),
                        "a mode 555 directory is writable for this user and no read-only mount"
                                + " can be made");
            }
            IOException e =
                    assertThrows(
                            IOException.class,
                            () -> OutputDirectory.check(readOnly.resolve("out"), false));
            String expected =
                    fs != null
                            ? "Read-only file system (" + readOnly
                            : "permission denied (" + readOnly;
            assertTrue(
                    e.getMessage().startsWith("--output_dir " + readOnly.resolve("out")),
                    e.getMessage());
            assertTrue(e.getMessage().contains("cannot write there: " + expected), e.getMessage());
            assertTrue(e.getMessage().contains("pass another --output_dir"), e.getMessage());
        } finally {
            Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void aFullDiskIsFoundBeforeTrainingAndAFailedSaveNamesPathAndReason()
            throws IOException, InterruptedException {
        Path small = dir.resolve("small");
        Files.createDirectories(small);
        try (SmallFileSystem fs = SmallFileSystem.mount(small, "size=2m")) {
            Assumptions.assumeTrue(fs != null, "a small file system needs root and mount(8)");
            Path target = small.resolve("out");
            save(target, false, "v1");
            // The model outgrows the disk while it is saved: the previous output stays.
            IOException e =
                    assertThrows(
                            IOException.class,
                            () ->
                                    OutputDirectory.check(target, false)
                                            .replace(
                                                    d ->
                                                            Files.write(
                                                                    d.resolve("model.safetensors"),
                                                                    new byte[4 << 20])));
            assertTrue(
                    e.getMessage()
                            .startsWith("--output_dir " + target + ": the model was not saved"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
            assertTrue(e.getMessage().contains("nothing at " + target + " was changed"));
            assertEquals("v1", Files.readString(target.resolve("model.safetensors")));
            assertEquals(List.of("out"), names(small), "the staging directory is removed");

            Files.write(small.resolve("filler"), new byte[(3 << 20) / 2]);
            IOException full =
                    assertThrows(IOException.class, () -> OutputDirectory.check(target, false));
            assertTrue(full.getMessage().contains("its file system is full"), full.getMessage());
        }
    }

    @Test
    void removesStaleSiblingsOfDeadSavesOnly() throws IOException, InterruptedException {
        Process done = new ProcessBuilder("true").start();
        assertTrue(done.waitFor(60, TimeUnit.SECONDS));
        String host = StaleOutputs.host();
        Path target = dir.resolve("out");
        // A save that died while staging, and one that died between its two renames.
        Path staging = dir.resolve(".out.staging-" + host + "-" + done.pid() + "-1");
        Files.createDirectories(staging);
        model(staging, "partial");
        OutputMarker.write(staging);
        Path previous = dir.resolve(".out.previous-" + host + "-" + done.pid() + "-2");
        Files.createDirectories(previous);
        model(previous, "last good");
        OutputMarker.write(previous);
        // A live save's staging directory, and a user's directory with a similar name.
        Path live =
                dir.resolve(".out.staging-" + host + "-" + ProcessHandle.current().pid() + "-3");
        Files.createDirectories(live);
        Path users = dir.resolve(".out.staging-notes");
        Files.createDirectories(users);
        Files.writeString(users.resolve("todo.txt"), "keep");

        StaleOutputs.clean(dir, "out");
        assertFalse(Files.exists(staging));
        assertEquals("last good", Files.readString(target.resolve("model.safetensors")));
        assertTrue(Files.isDirectory(live));
        assertEquals("keep", Files.readString(users.resolve("todo.txt")));

        Files.createDirectories(previous);
        model(previous, "older");
        OutputMarker.write(previous);
        save(target, false, "new"); // cleans first: the older output is deleted
        assertFalse(Files.exists(previous));
        assertEquals("new", Files.readString(target.resolve("model.safetensors")));
    }

    /** A tmpfs mounted for a test (root only), unmounted on close. */
    private record SmallFileSystem(Path mountPoint) implements AutoCloseable {

        /** Mounts a tmpfs, or returns null where that is not possible (not root, no mount). */
        static SmallFileSystem mount(Path mountPoint, String options)
                throws IOException, InterruptedException {
            if (!"root".equals(System.getProperty("user.name"))) {
                return null;
            }
            Process mount =
                    new ProcessBuilder(
                                    "mount",
                                    "-t",
                                    "tmpfs",
                                    "-o",
                                    options,
                                    "tmpfs",
                                    mountPoint.toString())
                            .redirectErrorStream(true)
                            .start();
            return mount.waitFor(60, TimeUnit.SECONDS) && mount.exitValue() == 0
                    ? new SmallFileSystem(mountPoint)
                    : null;
        }

        @Override
        public void close() throws IOException {
            try {
                new ProcessBuilder("umount", mountPoint.toString())
                        .inheritIO()
                        .start()
                        .waitFor(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
