package ai.djl.fsdp.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.fsdp.checkpoint.CheckpointDirectory;
import ai.djl.fsdp.checkpoint.ShardedCheckpointReader;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sharded checkpoints saved and loaded in one process (one rank): a resumed run continues exactly,
 * checkpoints rotate, and a checkpoint that is incomplete, damaged or of another model is refused
 * before any step with a message naming the file and the tensor.
 */
class CheckpointFilesTest {

    private static final String SHARD = CheckpointDirectory.shardFile(0, 1);

    @Test
    void aResumedRunGivesTheSameLossesAndOldCheckpointsRotate(@TempDir Path directory)
            throws Exception {
        Path full = directory.resolve("full");
        Path resumed = directory.resolve("resumed");
        train(full, null, directory, List.of(1, 2, 3));
        train(resumed, CheckpointDirectory.of(directory, 2), null, List.of());
        List<String> all = Files.readAllLines(Path.of(full + "-0"));
        assertEquals(all.subList(2, 4), Files.readAllLines(Path.of(resumed + "-0")));

        assertEquals(
                List.of(
                        CheckpointDirectory.of(directory, 1),
                        CheckpointDirectory.of(directory, 2),
                        CheckpointDirectory.of(directory, 3)),
                CheckpointDirectory.list(directory));
        Files.createDirectories(directory.resolve("checkpoint-9")); // incomplete: no marker
        assertEquals(
                CheckpointDirectory.of(directory, 3), CheckpointDirectory.newest(directory).get());
        Path usersFile = Files.writeString(directory.resolve("notes.txt"), "mine");
        CheckpointDirectory.keepNewest(directory, 2);
        assertEquals(
                List.of(CheckpointDirectory.of(directory, 2), CheckpointDirectory.of(directory, 3)),
                CheckpointDirectory.list(directory));
        assertTrue(Files.exists(usersFile), "nothing but complete checkpoints is deleted");
        assertTrue(Files.isDirectory(directory.resolve("checkpoint-9")));
    }

    @Test
    void aShardedCheckpointLoadsIntoAPlainModel(@TempDir Path directory) throws Exception {
        train(directory.resolve("run"), null, directory, List.of(4));
        try (Model loaded = Model.newInstance("tiny-lm", Device.cpu())) {
            loaded.setBlock(new TinyLm(0));
            loaded.getBlock().initialize(loaded.getNDManager(), DataType.FLOAT32, new Shape(2, 3));
            ShardedCheckpointReader.loadInto(
                    CheckpointDirectory.of(directory, 4), loaded.getBlock());
            for (String line : Files.readAllLines(directory.resolve(ResumeRankMain.FINAL))) {
                String[] fields = line.split(" ");
                float[] trained = new float[fields.length - 1];
                for (int i = 1; i < fields.length; i++) {
                    trained[i - 1] = Float.parseFloat(fields[i]);
                }
                assertArrayEquals(
                        trained,
                        loaded.getBlock().getParameters().get(fields[0]).getArray().toFloatArray(),
                        fields[0]);
            }
        }
    }

    @Test
    void badCheckpointsAreRefusedNamingTheFileAndTensor(@TempDir Path directory) throws Exception {
        train(directory.resolve("run"), null, directory, List.of(2));
        Path good = CheckpointDirectory.of(directory, 2);

        assertRefused(
                directory,
                good,
                "no-marker",
                copy -> delete(copy.resolve("COMPLETE")),
                "not a complete checkpoint");
        assertRefused(
                directory,
                good,
                "no-shard",
                copy -> delete(copy.resolve(SHARD)),
                SHARD + " is missing");
        assertRefused(directory, good, "short-shard", copy -> truncate(copy.resolve(SHARD)), SHARD);
        assertRefused(
                directory,
                good,
                "short-metadata",
                copy -> truncate(copy.resolve(CheckpointDirectory.METADATA)),
                "metadata.json is not valid");
        assertRefused(
                directory,
                good,
                "other-shape",
                copy ->
                        rewrite(
                                copy.resolve(CheckpointDirectory.METADATA),
                                "\"shape\": [\n        11,\n        6\n      ]",
                                "\"shape\": [\n        12,\n        6\n      ]"),
                "embedding has shape (12, 6) in the checkpoint, (11, 6) in the model");
        // A model whose frozen norm trains needs optimizer state the checkpoint does not hold.
        IOException otherTrainables =
                assertThrows(
                        IOException.class,
                        () ->
                                ResumeRankMain.run(
                                        directory.resolve("x"),
                                        4,
                                        good,
                                        null,
                                        List.of(),
                                        false,
                                        0.2f,
                                        2,
                                        false));
        assertTrue(
                otherTrainables.getMessage().contains("does not fit this model"),
                otherTrainables.getMessage());
        assertTrue(
                otherTrainables.getMessage().contains("optimizer.means.mixer1.norm.beta"),
                otherTrainables.getMessage());
        assertFalse(Files.exists(Path.of(directory.resolve("x") + "-0")), "nothing trained");
    }

    private static void assertRefused(
            Path directory, Path good, String name, Consumer<Path> damage, String expected)
            throws Exception {
        Path copy = directory.resolve(name);
        Files.createDirectories(copy);
        try (Stream<Path> files = Files.list(good)) {
            for (Path file : files.toList()) {
                Files.copy(file, copy.resolve(file.getFileName()));
            }
        }
        damage.accept(copy);
        IOException e =
                assertThrows(
                        IOException.class,
                        () -> train(directory.resolve(name + "-run"), copy, null, List.of()),
                        name);
        assertTrue(e.getMessage().contains(expected), name + ": " + e.getMessage());
        assertFalse(Files.exists(Path.of(directory.resolve(name + "-run") + "-0")), name);
    }

    private static void train(Path out, Path resumeFrom, Path saveDir, List<Integer> saveAfter)
            throws Exception {
        ResumeRankMain.run(out, 4, resumeFrom, saveDir, saveAfter, false, 0.2f, 2, true);
    }

    private static void delete(Path file) {
        try {
            Files.delete(file);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void truncate(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.truncate(channel.size() / 2);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void rewrite(Path file, String from, String to) {
        try {
            String text = Files.readString(file);
            if (!text.contains(from)) {
                throw new AssertionError(file + " lacks " + from);
            }
            Files.writeString(file, text.replaceFirst(java.util.regex.Pattern.quote(from), to));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
